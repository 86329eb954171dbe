"""Several models in one report: what the comparison index reads and says.

``folders`` names the models' folders and reads the list of them (torch-free);
``measures`` and ``findings`` are the pure comparison the index shows. Analysing several
models is ``attnreport.build_several``; rendering them, ``attnreport.publish_several``.
"""
