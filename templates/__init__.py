"""The report's Jinja templates and their assets, shipped as ``attnreport.templates``.

They live at the top of the repository so a designer finds them without reading
Python; ``setup.py`` maps this folder into the package, so ``pip install .`` ships
them inside the wheel and ``pip install -e .`` reads them here. Load them only through
``attnreport.site.render`` (``templates_root``).
"""
