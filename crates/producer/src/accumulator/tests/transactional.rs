//! A transactional producer's batches: a failed one dooms the transaction (what waits fails at
//! once, nothing more goes out), and the epoch its abort brings lets the next one go at once.

use super::*;

const TRANSACTIONAL_ID: &str = "tx";

/// A transactional accumulator as `init_transactions` leaves it: producer 7, epoch 3.
fn transactional_bench() -> Bench {
    let mut identity = Identity::transactional(TRANSACTIONAL_ID);
    identity.reset_producer_id(ProducerIdentity {
        producer_id: 7,
        producer_epoch: 3,
    });
    bench_with(identity)
}

/// The abort's EndTxn may answer before a sender looks at the accumulator again: the epoch
/// it brings serves the next transaction at once, whatever the failed batch asked for.
#[tokio::test]
async fn the_epoch_an_abort_brings_sends_the_next_transaction_at_once() {
    let mut bench = transactional_bench();
    let doomed = bench.send("a");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::InvalidRecord));
    assert!(matches!(outcome(doomed).await, Err(Error::Refused { .. })));
    bench.accumulator.reset_producer_id(ProducerIdentity {
        producer_id: 7,
        producer_epoch: 4,
    });
    let next = bench.send("b");
    let request = bench
        .drain()
        .expect("the next transaction's batch, at once");
    assert_eq!(Bench::only_batch(&request), (4, 0, "b".to_owned()));
    bench.answer(request, Ok(2));
    assert_eq!(outcome(next).await.unwrap(), 2);
    assert!(!bench.accumulator.needs_new_epoch());
}

/// Java's Sender aborts the undrained batches of a transaction in error: the records that
/// waited behind the failed batch, and those sent after it, fail at once.
#[tokio::test]
async fn a_doomed_transactions_records_fail_at_once() {
    let mut bench = transactional_bench();
    let failed = bench.send("a");
    let waiting = bench.send("b");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::InvalidRecord));
    assert!(
        bench.drain().is_none(),
        "nothing goes out in a doomed transaction"
    );
    assert!(bench.accumulator.needs_new_epoch(), "commit says to abort");
    assert!(matches!(outcome(failed).await, Err(Error::Refused { .. })));
    let late = bench.send("c");
    assert!(bench.drain().is_none());
    for delivery in [waiting, late] {
        let error = outcome(delivery).await.unwrap_err();
        assert!(
            matches!(&error, Error::TransactionAbortable { transactional_id, .. }
                if transactional_id == TRANSACTIONAL_ID),
            "{error:?}"
        );
    }
    assert_eq!(bench.free_memory(), MEMORY, "every byte given back");
}

/// A sequence gap at a partition's oldest batch dooms the transaction (its abort brings the
/// next epoch): the batch fails with the broker's answer instead of waiting to go again.
#[tokio::test]
async fn a_sequence_gap_in_a_transaction_fails_the_batch() {
    let mut bench = transactional_bench();
    let gap = bench.send("a");
    let request = bench.drain().expect("a ready batch");
    bench.answer(request, Err(ProduceErrorKind::OutOfOrderSequenceNumber));
    let error = outcome(gap).await.unwrap_err();
    assert!(matches!(error, Error::Refused { .. }), "{error:?}");
    assert!(bench.drain().is_none());
    assert!(bench.accumulator.needs_new_epoch());
}
