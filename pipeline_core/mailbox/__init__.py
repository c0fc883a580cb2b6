"""Flink's task mailbox model: one owner thread runs a default action and every mail.

::

    sink threads, metastore poller, timers            mailbox (owner) thread
    ─────────────────────────────────────             ───────────────────────────────────
    MailboxExecutor.execute/submit ──put──►  TaskMailbox  ◄──create_batch/take── MailboxProcessor
    processor.suspend/report_throwable ─put_first─►  │                              │
    Suspension.resume ──put_first (control mail)─►   │        run_mailbox_loop: all mails,
                                                               then one default-action call
                                                               (e.g. a 25 ms read slice)

All pipeline state is mutated on the mailbox thread; other threads only put mails. Priorities
do not reorder the loop (mails run in put order, control mails first); they decide which mails
``MailboxExecutor.yield_()`` may run from inside a long action.

Example::

    def read_slice(controller: MailboxDefaultAction.Controller) -> None:
        if not reader.read_for(0.025):
            resume_later(controller.suspend_default_action())   # .resume() from any thread

    processor = MailboxProcessor(read_slice)        # owned by the constructing thread
    checkpoints = processor.get_mailbox_executor(MAX_PRIORITY)
    # elsewhere: checkpoints.execute(lambda: start_checkpoint(7), "checkpoint %d", 7)
    with processor:
        processor.run_mailbox_loop()                # until all_actions_completed()
"""

from ._default_action import DefaultAction, MailboxDefaultAction
from ._descriptor_source import DescriptorSource
from ._exceptions import (
    IllegalThreadError,
    MailboxClosedException,
    MailboxError,
    RejectedExecutionError,
    ReportedThrowableError,
)
from ._executor import MailboxExecutor
from ._mail import MAX_PRIORITY, MIN_PRIORITY, Mail
from ._metrics import DEFAULT_LATENCY_WINDOW, MailboxMetrics
from ._processor import MailboxProcessor
from ._task_mailbox import MailboxState, TaskMailbox

__all__ = [
    "DEFAULT_LATENCY_WINDOW",
    "MAX_PRIORITY",
    "MIN_PRIORITY",
    "DefaultAction",
    "DescriptorSource",
    "IllegalThreadError",
    "Mail",
    "MailboxClosedException",
    "MailboxDefaultAction",
    "MailboxError",
    "MailboxExecutor",
    "MailboxMetrics",
    "MailboxProcessor",
    "MailboxState",
    "RejectedExecutionError",
    "ReportedThrowableError",
    "TaskMailbox",
]
