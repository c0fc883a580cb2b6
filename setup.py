"""The compiled parts of the package: the multiline presets' line tests
(``pipeline_core/source/_framing.c``) and the manifest's event columns as JSON
(``pipeline_core/staging_contract/_int_lists.c``). Everything else is declared in
``pyproject.toml``.

The extensions are optional: where they cannot be built (no C compiler), the install goes on,
``pipeline_core.source._preset_lines`` runs the same tests with NumPy and
``pipeline_core.staging_contract._events`` writes the same JSON from Python ints.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pipeline_core.source._framing",
            sources=["pipeline_core/source/_framing.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "pipeline_core.staging_contract._int_lists",
            sources=["pipeline_core/staging_contract/_int_lists.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
