"""The JSON Schema of dataset files, for editors and other tools.

A dataset file may name the schema in its ``$schema`` key; editors that understand JSON Schema
(VS Code, JetBrains IDEs, the YAML language server) then complete keys and flag mistakes as
the file is written. The schema is generated from the pydantic models, so it always matches
what :func:`~evaltrace.datasets.load_dataset` accepts field by field (the checks that span
fields, such as unique entry names, are beyond what a schema says).
"""

from __future__ import annotations

from typing import Any, Final

from evaltrace.datasets.model import Dataset

__all__ = ["JSON_SCHEMA_DIALECT", "dataset_json_schema"]

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect the schema is written in."""


def dataset_json_schema() -> dict[str, Any]:
    """The JSON Schema of a dataset file.

    Returns:
        A new dict each call, ready for ``json.dumps``.

    Example:
        >>> schema = dataset_json_schema()
        >>> schema["required"], "additionalProperties" in schema
        (['entries'], True)
    """
    schema = Dataset.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}
