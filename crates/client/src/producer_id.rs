//! InitProducerId for the idempotent producer: a producer id and epoch from any broker, and
//! the form that sends the current id and epoch back (KIP-360), after UNKNOWN_PRODUCER_ID or
//! OUT_OF_ORDER_SEQUENCE_NUMBER when the producer cannot bump its epoch itself; and for a
//! transactional producer, from the coordinator of its `transactional.id`.

use kafka_protocol::messages::{InitProducerIdRequest, ProducerId, TransactionalId};
use kafka_protocol::protocol::StrBytes;

use super::Connection;
use crate::Error;

/// The first InitProducerId version with the current producer id and epoch (KIP-360).
const EPOCH_BUMP_VERSION: i16 = 3;

/// COORDINATOR_LOAD_IN_PROGRESS.
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
/// COORDINATOR_NOT_AVAILABLE.
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
/// NOT_COORDINATOR.
pub const NOT_COORDINATOR: i16 = 16;
/// CONCURRENT_TRANSACTIONS.
pub const CONCURRENT_TRANSACTIONS: i16 = 51;

/// A producer id and the epoch that goes with it, as every batch of the producer carries them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProducerIdentity {
    /// The producer id.
    pub producer_id: i64,
    /// The epoch of the id; a bump raises it (the broker may also hand out a new id).
    pub producer_epoch: i16,
}

/// Asks `connection`'s broker for a producer id for an idempotent producer (no transactional
/// id, no transaction timeout): any broker answers that, so the least loaded one will do.
///
/// With `current`, sends that identity along (KIP-360's fields, brokers of Kafka 2.5 on). A
/// broker bumps the epoch that way only for a transactional id; for an idempotent producer
/// it answers a fresh id, so such a producer bumps its epoch itself (the next epoch, sequences
/// from 0, which the broker accepts and after which it fences the old epoch) and asks for a
/// new id only when the epoch is exhausted, as the Java client does. A broker error is
/// [`Error::Broker`] with api `InitProducerId`; [`is_retriable`] says whether asking again
/// (after a back-off) can succeed.
pub async fn init_producer_id(
    connection: &mut Connection,
    current: Option<ProducerIdentity>,
) -> Result<ProducerIdentity, Error> {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(-1);
    send(connection, request, current).await
}

/// Asks the transaction coordinator of `transactional_id` (found with
/// [`find_coordinator_of`](crate::group::find_coordinator_of) and
/// [`CoordinatorType::Transaction`](crate::group::CoordinatorType::Transaction)) for the
/// producer id and a new epoch of that id: earlier producers with the same id are fenced from
/// then on, and a transaction one of them left open is aborted (the answer is
/// CONCURRENT_TRANSACTIONS until it is). `transaction_timeout_ms` is
/// `transaction.timeout.ms`: the coordinator aborts a transaction left open longer.
///
/// With `current` (KIP-360, Kafka 2.5 on), the coordinator bumps that identity's epoch if it
/// is still the id's newest, the way back from an abortable error that needs a new epoch
/// (UNKNOWN_PRODUCER_ID); it answers PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before Kafka
/// 2.8) if another producer took the id over. Errors as [`init_producer_id`]'s; the
/// transaction classifier [`crate::transaction::classify_error`] says what each means.
pub async fn init_transactional_producer_id(
    connection: &mut Connection,
    transactional_id: &str,
    transaction_timeout_ms: i32,
    current: Option<ProducerIdentity>,
) -> Result<ProducerIdentity, Error> {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_string(
            transactional_id.to_owned(),
        ))))
        .with_transaction_timeout_ms(transaction_timeout_ms);
    send(connection, request, current).await
}

/// Sends `request` with `current` in KIP-360's fields (if any), and reads the identity.
async fn send(
    connection: &mut Connection,
    mut request: InitProducerIdRequest,
    current: Option<ProducerIdentity>,
) -> Result<ProducerIdentity, Error> {
    if let Some(identity) = current {
        let version = connection
            .versions()
            .negotiate::<InitProducerIdRequest>(connection.address())?;
        if version < EPOCH_BUMP_VERSION {
            return Err(Error::InvalidArgument {
                what: "InitProducerId epoch bump",
                detail: format!(
                    "broker {} speaks InitProducerId up to v{version}; bumping an epoch \
                     needs v{EPOCH_BUMP_VERSION} (Kafka 2.5 or later)",
                    connection.address()
                ),
            });
        }
        request = request
            .with_producer_id(ProducerId(identity.producer_id))
            .with_producer_epoch(identity.producer_epoch);
    }
    let (_, response) = connection.request(&request).await?;
    if response.error_code != 0 {
        return Err(Error::Broker {
            broker: connection.address().to_owned(),
            api: "InitProducerId",
            topic: None,
            partition: None,
            code: response.error_code,
            name: crate::error_name(response.error_code),
        });
    }
    Ok(ProducerIdentity {
        producer_id: response.producer_id.0,
        producer_epoch: response.producer_epoch,
    })
}

/// Whether an error of [`init_producer_id`] is passing: the coordinator is loading or moved,
/// a transaction of the same id is still ending, or the connection failed. Any other broker
/// error (an ACL refusal, an unsupported bump) stays the same when asked again.
pub fn is_retriable(error: &Error) -> bool {
    match error {
        Error::Broker { code, .. } => matches!(
            *code,
            COORDINATOR_LOAD_IN_PROGRESS
                | COORDINATOR_NOT_AVAILABLE
                | NOT_COORDINATOR
                | CONCURRENT_TRANSACTIONS
        ),
        other => other.is_connection_failure(),
    }
}
