"""Tool execution: argument parsing, preflight, batch adapter, scheduler, executor, output limits."""

from agent.tools._scheduler import ToolScheduler
from agent.tools.accesses import AllAccess, FileAccess, accesses_conflict
from agent.tools.arguments import ParsedArguments, parse_tool_call_arguments
from agent.tools.base import Tool, ToolCallResult, ToolContext, ToolExecution, ToolResult, ToolResultSpill
from agent.tools.batch import BatchAdapter
from agent.tools.cancel import CancelSignal
from agent.tools.executor import ToolExecutor
from agent.tools.output import ToolOutputAccumulator
from agent.tools.registry import ToolRegistry, default_registry, openai_tool_declarations
from agent.tools.workspace import PathSecurityError

__all__ = [
    "AllAccess",
    "BatchAdapter",
    "CancelSignal",
    "FileAccess",
    "ParsedArguments",
    "PathSecurityError",
    "Tool",
    "ToolCallResult",
    "ToolContext",
    "ToolExecution",
    "ToolExecutor",
    "ToolOutputAccumulator",
    "ToolRegistry",
    "ToolResult",
    "ToolResultSpill",
    "ToolScheduler",
    "accesses_conflict",
    "default_registry",
    "openai_tool_declarations",
    "parse_tool_call_arguments",
]
