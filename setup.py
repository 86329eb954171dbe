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
    packages=[*find_packages(include=["attnreport", "attnreport.*"]), *TEMPLATES],
    package_dir={"attnreport.templates": "templates"},
    package_data={
        "attnreport": ["data/*.txt"],
        "attnreport.charts": ["*.js"],
        "attnreport.serve": ["*.js"],
        **{name: ["*"] for name in TEMPLATES},
    },
)
