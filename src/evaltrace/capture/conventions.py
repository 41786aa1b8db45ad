"""Span attribute names that evaltrace writes and reads.

The OpenInference names are those of the OpenInference semantic conventions; the ``gen_ai``
names are those of the OpenTelemetry GenAI semantic conventions. They are defined here, as our
own constants, so that no deprecated upstream constant module is needed.
"""

from __future__ import annotations

from typing import Final

# OpenInference: generic input / output on any span.
SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
MIME_JSON: Final = "application/json"
MIME_TEXT: Final = "text/plain"

# OpenInference: LLM spans.
LLM_MODEL_NAME: Final = "llm.model_name"
LLM_PROVIDER: Final = "llm.provider"
LLM_SYSTEM: Final = "llm.system"
LLM_INVOCATION_PARAMETERS: Final = "llm.invocation_parameters"
LLM_INPUT_MESSAGES: Final = "llm.input_messages"
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
LLM_TOKEN_COUNT_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
LLM_TOKEN_COUNT_CACHE_WRITE: Final = "llm.token_count.prompt_details.cache_write"
LLM_TOOLS: Final = "llm.tools"
TOOL_JSON_SCHEMA: Final = "tool.json_schema"
TOOL_NAME: Final = "tool.name"
TOOL_DESCRIPTION: Final = "tool.description"
MESSAGE_ROLE: Final = "message.role"
MESSAGE_CONTENT: Final = "message.content"
MESSAGE_CONTENTS: Final = "message.contents"
MESSAGE_NAME: Final = "message.name"
MESSAGE_TOOL_CALLS: Final = "message.tool_calls"
MESSAGE_TOOL_CALL_ID: Final = "message.tool_call_id"
MESSAGE_CONTENT_TYPE: Final = "message_content.type"
MESSAGE_CONTENT_TEXT: Final = "message_content.text"
TOOL_CALL_ID: Final = "tool_call.id"
TOOL_CALL_FUNCTION_NAME: Final = "tool_call.function.name"
TOOL_CALL_FUNCTION_ARGUMENTS: Final = "tool_call.function.arguments"

# OpenInference: retriever spans.
RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"
DOCUMENT_ID: Final = "document.id"
DOCUMENT_CONTENT: Final = "document.content"
DOCUMENT_SCORE: Final = "document.score"
DOCUMENT_METADATA: Final = "document.metadata"

# OpenTelemetry GenAI semantic conventions.
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_SYSTEM: Final = "gen_ai.system"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_REQUEST_PREFIX: Final = "gen_ai.request."
# The result of evaluating GenAI output: an event of the GenAI semantic conventions.
GEN_AI_EVALUATION_RESULT_EVENT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
ERROR_TYPE: Final = "error.type"

# OpenTelemetry: the event recording an exception on a span.
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"

# evaltrace's own span event for wrap(value, purpose=..., name=...).
WRAP_EVENT: Final = "evaltrace.wrap"
WRAP_NAME: Final = "evaltrace.wrap.name"
WRAP_PURPOSE: Final = "evaltrace.wrap.purpose"
WRAP_VALUE: Final = "evaltrace.wrap.value"
WRAP_DESCRIPTION: Final = "evaltrace.wrap.description"
WRAP_MANY: Final = "evaltrace.wrap.many"
# Marks the span the runner opens around one evaluated run.
RUN_SPAN_ATTRIBUTE: Final = "evaltrace.run"
# evaltrace's extra attributes of the gen_ai.evaluation.result events of a run's statistics:
# evaltrace.statistics.<figure> (n, mean.low, pass_rate, ...), the run's name and id.
STATISTICS_PREFIX: Final = "evaltrace.statistics."
STATISTICS_RUN: Final = "evaltrace.statistics.run"
STATISTICS_RUN_ID: Final = "evaltrace.statistics.run_id"
