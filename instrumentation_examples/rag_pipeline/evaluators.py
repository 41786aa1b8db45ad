"""The RAG pipeline's own evaluator: Faithfulness to the passages the retriever returned.

evaltrace's ``Faithfulness`` judges an answer against a ``context`` taken from the entry's
``eval_metadata``: a fixed context written into the dataset. A RAG app's context is whatever
its retriever found in this run, so this evaluator reads the retrieved documents from the
run's trace (the last ``@wrap(kind="retriever")`` span) and hands them to ``Faithfulness`` as
the context.
"""

from __future__ import annotations

from evaltrace import Evaluable, Evaluation, EvaluatorContext, NamedData, evaluate
from evaltrace.judges import Faithfulness
from evaltrace.trace import span_documents, walk_trace

_FAITHFULNESS = Faithfulness()


async def faithful_to_retrieved(ctx: EvaluatorContext) -> Evaluation:
    """The share of the answer's statements that the retrieved sections support."""
    trace = ctx.trace or []
    retrievers = [node.span for node in walk_trace(trace) if node.span.kind == "retriever"]
    documents = span_documents(retrievers[-1]) if retrievers else None
    if not documents:
        return Evaluation.skip("the run retrieved no documents to judge the answer against")
    case = Evaluable(
        eval_input=[NamedData(name="question", value=ctx.input("question"))],
        eval_output=[NamedData(name="answer", value=ctx.output("answer"))],
        eval_metadata={"context": [document["content"] for document in documents]},
    )
    return await evaluate(_FAITHFULNESS, case)
