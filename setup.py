"""Package layout that ``pyproject.toml`` cannot say: the top-level ``templates/`` folder
is the package ``attnreport.templates``, in the wheel and in an editable install alike.

Everything else (metadata, dependencies, entry points) is in ``pyproject.toml``.
"""

from setuptools import find_namespace_packages, find_packages, setup

TEMPLATES = [
    "attnreport.templates",
    *(f"attnreport.templates.{name}" for name in find_namespace_packages("templates")),
]

setup(
    # attnreport.data holds data files only (no __init__.py): named here so that setuptools
    # ships it as a package instead of warning that it is absent from ``packages``.
    packages=[
        *find_packages(include=["attnreport", "attnreport.*"]),
        "attnreport.data",
        *TEMPLATES,
    ],
    package_dir={"attnreport.templates": "templates"},
    package_data={
        "attnreport": ["data/*.txt"],
        "attnreport.charts": ["*.js"],
        "attnreport.serve": ["*.js"],
        **{name: ["*"] for name in TEMPLATES},
    },
)
