//! A transactional producer's batches: the epoch an abort brings lets the next transaction's
//! go at once.

use super::*;

/// A transactional accumulator as `init_transactions` leaves it: producer 7, epoch 3.
fn transactional_bench() -> Bench {
    let mut identity = Identity::transactional();
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
