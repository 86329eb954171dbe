"""Several models in one report: each model's own results and pages, one comparison.

``folders`` names the models' folders and reads the list of them (torch-free);
``run`` analyses several models with their intervention layers matched by relative
depth; ``measures`` and ``findings`` are the pure comparison the index shows.
"""
