"""The package's files for setuptools; everything else about the package is in setup.cfg.

`configs/` stays at the repository's root, where the README, docs, Makefile, tests and bench name
it (`configs/experiment/demo.yaml`), and is shipped inside the package as `kold_span/configs`,
so an installed package trains from a config by name (`kold_span/config/shipped.py`).
"""
from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["kold_span", "kold_span.*"]), "kold_span.configs"],
      package_dir={"kold_span.configs": "configs"},
      package_data={"kold_span": ["py.typed", "service/static/*.html", "corpora/functional.yaml"],
                    "kold_span.configs": ["**/*.yaml"]})
