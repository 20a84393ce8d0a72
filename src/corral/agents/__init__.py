"""Building blocks for tool-calling agents: messages, a toolbox, a tool node, a ReAct graph.

Needs the ``agents`` extra (pydantic): ``pip install 'corral[agents]'``. The provider
adapters are the submodules ``corral.agents.openai`` and ``corral.agents.anthropic`` (extras
``openai`` and ``anthropic``), imported only when you import them.
"""

from corral.agents.messages import (
    AgentState,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant,
    last_assistant,
    new_id,
    system,
    tool_result,
    user,
)
from corral.agents.model import Emit, Model, TokenEvent
from corral.agents.react import AgentUpdate, needs_tools, react_agent, tool_node
from corral.agents.toolbox import Toolbox, ToolSchema
from corral.errors import ToolError

__all__ = [
    # messages
    "AgentState",
    "AgentUpdate",
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "assistant",
    "last_assistant",
    "new_id",
    "system",
    "tool_result",
    "user",
    # tools
    "ToolError",
    "ToolSchema",
    "Toolbox",
    # the model
    "Emit",
    "Model",
    "TokenEvent",
    # the graph
    "needs_tools",
    "react_agent",
    "tool_node",
]
