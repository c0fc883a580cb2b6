"""The compiled part of the package: the multiline presets' line tests
(``pipeline_core/source/_framing.c``). Everything else is declared in ``pyproject.toml``.

The extension is optional: where it cannot be built (no C compiler), the install goes on and
``pipeline_core.source._preset_lines`` runs the same tests with NumPy.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pipeline_core.source._framing",
            sources=["pipeline_core/source/_framing.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
