"""BatchChannel and BatchSink: Flume-like transactions over whole batches."""

from __future__ import annotations

import pytest

from pipeline_core.sinks import (
    BatchChannel,
    BatchSink,
    ChannelFullError,
    DeliveryBatch,
    Status,
)
from tests.pipeline_core.sinks.support import make_batch

# -- the channel -------------------------------------------------------------------------------


def test_should_hand_out_batches_oldest_first() -> None:
    channel = BatchChannel(capacity=3)
    first, second = make_batch(1), make_batch(2)
    channel.put(first)
    channel.put(second)

    assert len(channel) == 2
    assert channel.peek() is first


def test_should_refuse_a_batch_beyond_its_capacity() -> None:
    channel = BatchChannel()
    channel.put(make_batch(1))

    with pytest.raises(ChannelFullError):
        channel.put(make_batch(2))

    assert len(channel) == 1


def test_should_reject_a_capacity_below_one() -> None:
    with pytest.raises(ValueError):
        BatchChannel(capacity=0)


def test_should_drop_every_batch_on_clear() -> None:
    channel = BatchChannel(capacity=2)
    batches = [make_batch(1), make_batch(2)]
    for batch in batches:
        channel.put(batch)

    assert channel.clear() == batches
    assert len(channel) == 0
    assert channel.peek() is None


# -- transactions ------------------------------------------------------------------------------


def test_should_keep_a_taken_batch_until_the_commit() -> None:
    channel = BatchChannel(capacity=2)
    first, second = make_batch(1), make_batch(2)
    channel.put(first)
    channel.put(second)

    with channel.transaction() as transaction:
        assert transaction.take() is first
        assert len(channel) == 2
        transaction.commit()

    assert channel.peek() is second


def test_should_keep_the_batch_on_rollback() -> None:
    channel = BatchChannel()
    batch = make_batch(1)
    channel.put(batch)

    transaction = channel.transaction()
    transaction.take()
    transaction.rollback()

    assert channel.peek() is batch


def test_should_roll_back_when_the_block_raises() -> None:
    channel = BatchChannel()
    batch = make_batch(1)
    channel.put(batch)

    with pytest.raises(ConnectionError), channel.transaction() as transaction:
        transaction.take()
        raise ConnectionError("reset")

    assert channel.peek() is batch


def test_should_roll_back_a_transaction_left_without_commit() -> None:
    channel = BatchChannel()
    channel.put(make_batch(1))

    with channel.transaction() as transaction:
        transaction.take()

    assert len(channel) == 1
    with pytest.raises(RuntimeError):
        transaction.commit()


def test_should_take_nothing_from_an_empty_channel() -> None:
    channel = BatchChannel()

    with channel.transaction() as transaction:
        assert transaction.take() is None
        transaction.commit()

    assert len(channel) == 0


def test_should_not_be_reusable_after_commit() -> None:
    channel = BatchChannel()
    channel.put(make_batch(1))
    transaction = channel.transaction()
    transaction.take()
    transaction.commit()

    with pytest.raises(RuntimeError):
        transaction.take()
    with pytest.raises(RuntimeError):
        transaction.commit()


def test_should_not_remove_a_newer_batch_when_the_taken_one_was_cleared() -> None:
    channel = BatchChannel()
    channel.put(make_batch(1))
    transaction = channel.transaction()
    transaction.take()
    channel.clear()  # a rewind drops the batch and puts it again
    replayed = make_batch(1)
    channel.put(replayed)

    transaction.commit()

    assert channel.peek() is replayed


# -- BatchSink ---------------------------------------------------------------------------------


class ListSink(BatchSink):
    def __init__(self, fail: bool = False) -> None:
        super().__init__("list")
        self.fail = fail
        self.batches: list[DeliveryBatch] = []

    def deliver(self, batch: DeliveryBatch) -> None:
        if self.fail:
            raise ConnectionError("reset")
        self.batches.append(batch)


def test_should_deliver_the_oldest_batch_and_commit_it() -> None:
    channel = BatchChannel(capacity=2)
    first, second = make_batch(1), make_batch(2)
    channel.put(first)
    channel.put(second)
    sink = ListSink()
    sink.set_channel(channel)

    assert sink.process() is Status.READY

    assert sink.batches == [first]
    assert channel.peek() is second


def test_should_back_off_without_delivering_when_the_channel_is_empty() -> None:
    sink = ListSink()
    sink.set_channel(BatchChannel())

    assert sink.process() is Status.BACKOFF

    assert sink.batches == []


def test_should_leave_the_batch_in_the_channel_when_delivery_raises() -> None:
    channel = BatchChannel()
    batch = make_batch(1)
    channel.put(batch)
    sink = ListSink(fail=True)
    sink.set_channel(channel)

    with pytest.raises(ConnectionError):
        sink.process()

    assert channel.peek() is batch


def test_should_refuse_to_process_without_a_channel() -> None:
    with pytest.raises(RuntimeError, match="no channel"):
        ListSink().process()
