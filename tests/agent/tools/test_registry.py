import pytest

from agent.tools import ToolRegistry, default_registry, openai_tool_declarations
from agent.tools.builtin import ReadFile
from agent.tools.registry import parameters_schema

BUILTIN_NAMES = ["read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "shell", "http_get"]


def test_the_default_registry_has_the_builtin_tools():
    assert default_registry().names == BUILTIN_NAMES


def test_declarations_have_the_openai_function_shape():
    declarations = openai_tool_declarations(default_registry())
    assert [d["function"]["name"] for d in declarations] == BUILTIN_NAMES
    for declaration in declarations:
        assert set(declaration) == {"type", "function"}
        assert declaration["type"] == "function"
        function = declaration["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert len(function["description"]) > 40
        assert function["parameters"]["type"] == "object"
        assert function["parameters"]["additionalProperties"] is False


def test_the_read_file_schema_is_the_pydantic_schema_without_titles():
    assert parameters_schema(ReadFile()) == {
        "additionalProperties": False,
        "properties": {
            "path": {
                "description": "Path of the file, relative to the workspace (or absolute inside it).",
                "type": "string",
            },
            "offset": {
                "default": 1,
                "description": "Line number to start at (1 is the first line).",
                "minimum": 1,
                "type": "integer",
            },
            "limit": {
                "default": 2000,
                "description": "Most lines to return.",
                "maximum": 2000,
                "minimum": 1,
                "type": "integer",
            },
        },
        "required": ["path"],
        "type": "object",
    }


def test_a_property_named_title_is_kept():
    from pydantic import BaseModel

    from tests.agent.tools.helpers import ScriptedTool

    class Titled(BaseModel):
        title: str

    tool = ScriptedTool("titled")
    tool.parameters = Titled  # type: ignore[misc]
    assert set(parameters_schema(tool)["properties"]) == {"title"}


def test_names_are_unique():
    registry = ToolRegistry([ReadFile()])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ReadFile())


def test_an_invalid_schema_is_refused_at_registration():
    from jsonschema.exceptions import SchemaError

    from tests.agent.tools.helpers import ScriptedTool

    with pytest.raises(SchemaError):
        ToolRegistry().register(ScriptedTool("bad"), schema={"type": 5})
