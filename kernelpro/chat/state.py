"""A chat thread's state: the messages, the current candidate, what it has spent. JSON-friendly, checkpointed."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict  # pydantic (Studio's schemas) refuses typing's before Python 3.12

from kernelpro.graphs.state import latest_usage, merge


class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    candidate: str  # path of the current candidate; "" while there is none (the reference is the kernel)
    previous: str  # path of the candidate before it ("" for the reference): what /diff compares against
    verdicts: Annotated[dict[str, dict[str, Any]], merge]  # candidate path -> its latest verdict (JSON)
    gpu_s: Annotated[float, operator.add]  # seconds the judge and the profiler ran for this thread
    usage: Annotated[dict[str, Any], latest_usage]  # UsageMeter.to_dict(): tokens and dollars
    stop_reason: str  # why the last answer stopped short (a budget), "" when it did not
