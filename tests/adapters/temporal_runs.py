"""Temporal workflow histories, made offline with the temporalio SDK's own types.

The Temporal server cannot run on this machine, so the server's part is built here: the
history events are the SDK's protobuf types (``temporalio.api.history.v1``), payloads
come from its default payload converter, and the JSON is its own serializer
(``WorkflowHistory.to_json()``), never written by hand. The activity's code is real: each
attempt runs in the SDK's ``ActivityEnvironment`` with the attempt's ``activity.info()``
and writes what it applies to a plain ledger, keyed by the idempotency key it sends
(``WORKFLOW_ID/RUN_ID:ACTIVITY_ID``). Every history is then replayed by the SDK's
``Replayer`` against the workflow below, which fails when the events are not the commands
the workflow's code issues, in order (this SDK version does not compare an activity's id
or type with the command's, so those rest on the builder). Needs the ``frameworks`` extra.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from datetime import datetime, timedelta, timezone

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

WORKFLOW_ID = "refund-o-7"
QUEUE = "refunds"
TIMEOUT = timedelta(seconds=10)
LEDGER: list = []  # where the activity writes (set by `scenario`)


@activity.defn(name="refund")
async def refund(order: str, amount: float) -> str:
    """Refund an order: one ledger line per run, under the key it sends the provider."""
    info = activity.info()
    LEDGER.append(
        {
            "idempotency_key": f"{info.workflow_id}/{info.workflow_run_id}:{info.activity_id}",
            "effect_id": f"re_{len(LEDGER) + 1}",
        }
    )
    return f"refunded {amount}"


@workflow.defn(name="RefundWorkflow")
class RefundWorkflow:
    """Refunds once; with `resend`, an activity that timed out is scheduled again (a new
    activity id), as a workflow that retries by hand does."""

    @workflow.run
    async def run(self, order: str, amount: float, resend: bool) -> str:
        policy = RetryPolicy(maximum_attempts=1 if resend else 3)
        try:
            return await workflow.execute_activity(
                "refund", args=[order, amount], start_to_close_timeout=TIMEOUT, retry_policy=policy
            )
        except ActivityError:
            if not resend:
                raise
            return await workflow.execute_activity(
                "refund", args=[order, amount], start_to_close_timeout=TIMEOUT, retry_policy=policy
            )


class _History:
    """Events of one run, numbered and timed in order (the server's job)."""

    def __init__(self, run_id: str):
        from temporalio.converter import default

        self.run_id, self.events = run_id, []
        self.conv = default().payload_converter

    def payloads(self, *values):
        from temporalio.api.common.v1 import Payloads

        return Payloads(payloads=self.conv.to_payloads(list(values)))

    def add(self, kind: str, **attrs) -> int:
        from google.protobuf.timestamp_pb2 import Timestamp
        from temporalio.api.enums.v1 import EventType
        from temporalio.api.history.v1 import HistoryEvent

        t = Timestamp()
        t.FromDatetime(
            datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=len(self.events))
        )
        field = "".join("_" + c.lower() if c.isupper() else c for c in kind)[1:]
        ev = HistoryEvent(
            event_id=len(self.events) + 1,
            event_time=t,
            event_type=EventType.Value("EVENT_TYPE_" + field.upper()),
            **{f"{field}_event_attributes": attrs["attributes"]},
        )
        self.events.append(ev)
        return ev.event_id

    def workflow_task(self) -> int:
        from temporalio.api import history
        from temporalio.api.taskqueue.v1 import TaskQueue

        h = history.v1
        s = self.add(
            "WorkflowTaskScheduled",
            attributes=h.WorkflowTaskScheduledEventAttributes(
                task_queue=TaskQueue(name=QUEUE), attempt=1
            ),
        )
        st = self.add(
            "WorkflowTaskStarted",
            attributes=h.WorkflowTaskStartedEventAttributes(
                scheduled_event_id=s, identity="worker-1"
            ),
        )
        return self.add(
            "WorkflowTaskCompleted",
            attributes=h.WorkflowTaskCompletedEventAttributes(
                scheduled_event_id=s, started_event_id=st, identity="worker-1"
            ),
        )


def _timeout(message="activity StartToClose timeout"):
    from temporalio.api.enums.v1 import TimeoutType
    from temporalio.api.failure.v1 import Failure, TimeoutFailureInfo

    return Failure(
        message=message,
        timeout_failure_info=TimeoutFailureInfo(
            timeout_type=TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE
        ),
    )


def _attempt(run_id: str, activity_id: str, attempt: int, fn=refund):
    """Run the real activity `fn` once as attempt `attempt`; its result."""
    from temporalio.testing import ActivityEnvironment

    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        activity_id=activity_id,
        activity_type="refund",
        attempt=attempt,
        workflow_id=WORKFLOW_ID,
        workflow_run_id=run_id,
        workflow_type="RefundWorkflow",
        task_queue=QUEUE,
    )
    return asyncio.run(env.run(fn, "o-7", 20.0))


def _activity(
    h: _History,
    done: int,
    activity_id: str,
    attempts: int,
    last: str,
    policy_attempts: int,
    fn=refund,
) -> None:
    """Schedule activity `activity_id`; its `attempts` real runs, all but the last timed
    out by the server (their completions lost); `last` is how the last one ends:
    completed or timed_out."""
    from temporalio.api import history
    from temporalio.api.common.v1 import ActivityType
    from temporalio.api.common.v1 import RetryPolicy as Policy
    from temporalio.api.enums.v1 import RetryState
    from temporalio.api.taskqueue.v1 import TaskQueue

    h1 = history.v1
    sch = h.add(
        "ActivityTaskScheduled",
        attributes=h1.ActivityTaskScheduledEventAttributes(
            activity_id=activity_id,
            activity_type=ActivityType(name="refund"),
            task_queue=TaskQueue(name=QUEUE),
            input=h.payloads("o-7", 20.0),
            workflow_task_completed_event_id=done,
            retry_policy=Policy(maximum_attempts=policy_attempts),
        ),
    )
    result = None
    for n in range(1, attempts + 1):
        result = _attempt(h.run_id, activity_id, n, fn)
    started = h1.ActivityTaskStartedEventAttributes(
        scheduled_event_id=sch, attempt=attempts, identity="worker-1"
    )
    if attempts > 1:
        started.last_failure.CopyFrom(_timeout())
    st = h.add("ActivityTaskStarted", attributes=started)
    if last == "completed":
        h.add(
            "ActivityTaskCompleted",
            attributes=h1.ActivityTaskCompletedEventAttributes(
                scheduled_event_id=sch,
                started_event_id=st,
                result=h.payloads(result),
                identity="worker-1",
            ),
        )
    else:
        h.add(
            "ActivityTaskTimedOut",
            attributes=h1.ActivityTaskTimedOutEventAttributes(
                scheduled_event_id=sch,
                started_event_id=st,
                failure=_timeout(),
                retry_state=RetryState.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED,
            ),
        )


def scenario(name: str, ledger: list, fn=refund) -> str:
    """The history of scenario `name` as ``WorkflowHistory.to_json()``; the activity's
    runs are appended to `ledger`. clean: one attempt, completed. retry: the first
    attempt applied but the server timed it out and ran a second (attempt 2 completed).
    resend: one attempt allowed, it applied and timed out, and the workflow scheduled the
    refund again under a new activity id. `fn` is the activity each attempt runs (a
    guarded refund, say)."""
    from temporalio.api import history
    from temporalio.api.common.v1 import WorkflowType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.client import WorkflowHistory

    global LEDGER
    LEDGER = ledger
    run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"toolcommit/temporal/{name}"))
    h = _History(run_id)
    h1 = history.v1
    resend = name == "resend"
    h.add(
        "WorkflowExecutionStarted",
        attributes=h1.WorkflowExecutionStartedEventAttributes(
            workflow_type=WorkflowType(name="RefundWorkflow"),
            task_queue=TaskQueue(name=QUEUE),
            input=h.payloads("o-7", 20.0, resend),
            workflow_id=WORKFLOW_ID,
            original_execution_run_id=run_id,
            first_execution_run_id=run_id,
            attempt=1,
            identity="client",
        ),
    )
    done = h.workflow_task()
    if name == "clean":
        _activity(h, done, "1", 1, "completed", 3, fn)
    elif name == "retry":
        _activity(h, done, "1", 2, "completed", 3, fn)
    else:
        _activity(h, done, "1", 1, "timed_out", 1, fn)
        done = h.workflow_task()
        _activity(h, done, "2", 1, "completed", 1, fn)
    done = h.workflow_task()
    h.add(
        "WorkflowExecutionCompleted",
        attributes=h1.WorkflowExecutionCompletedEventAttributes(
            result=h.payloads("refunded 20.0"), workflow_task_completed_event_id=done
        ),
    )
    text = WorkflowHistory(WORKFLOW_ID, h.events).to_json()
    replay(text)
    return text


def replay(text: str) -> None:
    """Replay a history against `RefundWorkflow` (the SDK's Replayer, offline); raises if
    the workflow's code would not have produced it."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    asyncio.run(
        Replayer(workflows=[RefundWorkflow]).replay_workflow(
            WorkflowHistory.from_json(WORKFLOW_ID, text)
        )
    )


def ledger_text(ledger: list) -> str:
    return "".join(json.dumps(r) + "\n" for r in ledger)
