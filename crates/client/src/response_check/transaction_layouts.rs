//! The layouts of the transaction coordinator's responses (AddPartitionsToTxn,
//! AddOffsetsToTxn, EndTxn) and of TxnOffsetCommit, field by field in wire order, for the
//! versions kafka-protocol decodes (from Kafka's message definitions).

use super::{all, plain, since, until, Kind, Layout, Message, I16, I32, I64, STR};

const ADD_PARTITIONS_PARTITION: Layout = plain(&[all(I32), all(I16)]);
const ADD_PARTITIONS_TOPIC: Layout = plain(&[
    all(STR),
    all(Kind::Array(&Kind::Struct(&ADD_PARTITIONS_PARTITION))),
]);
const ADD_PARTITIONS_TRANSACTION: Layout = plain(&[
    all(STR),
    all(Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TOPIC))),
]);
pub(super) const ADD_PARTITIONS_TO_TXN: Message = Message {
    versions: (0, 5),
    flexible_from: 3,
    // v4 (broker to broker) batches transactions and adds a top-level error code.
    body: plain(&[
        all(I32),
        since(4, I16),
        since(4, Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TRANSACTION))),
        until(3, Kind::Array(&Kind::Struct(&ADD_PARTITIONS_TOPIC))),
    ]),
};

pub(super) const ADD_OFFSETS_TO_TXN: Message = Message {
    versions: (0, 4),
    flexible_from: 3,
    body: plain(&[all(I32), all(I16)]),
};

pub(super) const END_TXN: Message = Message {
    versions: (0, 5),
    flexible_from: 3,
    body: plain(&[all(I32), all(I16), since(5, I64), since(5, I16)]),
};

const TXN_OFFSET_COMMIT_PARTITION: Layout = plain(&[all(I32), all(I16)]);
const TXN_OFFSET_COMMIT_TOPIC: Layout = plain(&[
    all(STR),
    all(Kind::Array(&Kind::Struct(&TXN_OFFSET_COMMIT_PARTITION))),
]);
pub(super) const TXN_OFFSET_COMMIT: Message = Message {
    versions: (0, 5),
    flexible_from: 3,
    body: plain(&[
        all(I32),
        all(Kind::Array(&Kind::Struct(&TXN_OFFSET_COMMIT_TOPIC))),
    ]),
};
