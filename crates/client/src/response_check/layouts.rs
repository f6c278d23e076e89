//! The response layouts, field by field in wire order, for the versions kafka-protocol
//! decodes (learned from its decoders and Kafka's message definitions).

use super::{
    all, between, plain, since, until, Kind, Layout, Message, Tag, BYTES, I16, I32, I32_ARRAY, I64,
    I8, NEVER, STR, UUID,
};

const API_VERSION: Layout = plain(&[all(I16), all(I16), all(I16)]);
const FEATURE_KEY: Layout = plain(&[since(3, STR), since(3, I16), since(3, I16)]);
pub(super) const API_VERSIONS: Message = Message {
    versions: (0, 4),
    flexible_from: 3,
    body: Layout {
        fields: &[
            all(I16),
            all(Kind::Array(&Kind::Struct(&API_VERSION))),
            since(1, I32),
        ],
        tags: &[
            Tag {
                tag: 0,
                from: 0,
                kind: Kind::Array(&Kind::Struct(&FEATURE_KEY)),
            },
            Tag {
                tag: 1,
                from: 0,
                kind: I64,
            },
            Tag {
                tag: 2,
                from: 0,
                kind: Kind::Array(&Kind::Struct(&FEATURE_KEY)),
            },
            Tag {
                tag: 3,
                from: 0,
                kind: I8,
            },
        ],
    },
};

const METADATA_BROKER: Layout = plain(&[all(I32), all(STR), all(I32), since(1, STR)]);
const METADATA_PARTITION: Layout = plain(&[
    all(I16),
    all(I32),
    all(I32),
    since(7, I32),
    all(I32_ARRAY),
    all(I32_ARRAY),
    since(5, I32_ARRAY),
]);
const METADATA_TOPIC: Layout = plain(&[
    all(I16),
    all(STR),
    since(10, UUID),
    since(1, I8),
    all(Kind::Array(&Kind::Struct(&METADATA_PARTITION))),
    since(8, I32),
]);
pub(super) const METADATA: Message = Message {
    versions: (0, 13),
    flexible_from: 9,
    body: plain(&[
        since(3, I32),
        all(Kind::Array(&Kind::Struct(&METADATA_BROKER))),
        since(2, STR),
        since(1, I32),
        all(Kind::Array(&Kind::Struct(&METADATA_TOPIC))),
        between(8, 10, I32),
        since(13, I16),
    ]),
};

const LIST_OFFSETS_PARTITION: Layout =
    plain(&[all(I32), all(I16), all(I64), all(I64), since(4, I32)]);
const LIST_OFFSETS_TOPIC: Layout = plain(&[
    all(STR),
    all(Kind::Array(&Kind::Struct(&LIST_OFFSETS_PARTITION))),
]);
pub(super) const LIST_OFFSETS: Message = Message {
    versions: (1, 10),
    flexible_from: 6,
    body: plain(&[
        since(2, I32),
        all(Kind::Array(&Kind::Struct(&LIST_OFFSETS_TOPIC))),
    ]),
};

const ABORTED_TRANSACTION: Layout = plain(&[all(I64), all(I64)]);
const EPOCH_END_OFFSET: Layout = plain(&[since(12, I32), since(12, I64)]);
const LEADER_ID_AND_EPOCH: Layout = plain(&[since(12, I32), since(12, I32)]);
const SNAPSHOT_ID: Layout = plain(&[all(I64), all(I32)]);
const NODE_ENDPOINT: Layout = plain(&[
    since(16, I32),
    since(16, STR),
    since(16, I32),
    since(16, STR),
]);
const FETCH_PARTITION: Layout = Layout {
    fields: &[
        all(I32),
        all(I16),
        all(I64),
        all(I64),
        since(5, I64),
        all(Kind::Array(&Kind::Struct(&ABORTED_TRANSACTION))),
        since(11, I32),
        all(BYTES),
    ],
    tags: &[
        Tag {
            tag: 0,
            from: 0,
            kind: Kind::Struct(&EPOCH_END_OFFSET),
        },
        Tag {
            tag: 1,
            from: 0,
            kind: Kind::Struct(&LEADER_ID_AND_EPOCH),
        },
        Tag {
            tag: 2,
            from: 0,
            kind: Kind::Struct(&SNAPSHOT_ID),
        },
    ],
};
const FETCH_TOPIC: Layout = plain(&[
    until(12, STR),
    since(13, UUID),
    all(Kind::Array(&Kind::Struct(&FETCH_PARTITION))),
]);
pub(super) const FETCH: Message = Message {
    versions: (4, 18),
    flexible_from: 12,
    body: Layout {
        fields: &[
            all(I32),
            since(7, I16),
            since(7, I32),
            all(Kind::Array(&Kind::Struct(&FETCH_TOPIC))),
        ],
        tags: &[Tag {
            tag: 0,
            from: 16,
            kind: Kind::Array(&Kind::Struct(&NODE_ENDPOINT)),
        }],
    },
};

const COORDINATOR: Layout = plain(&[
    since(4, STR),
    since(4, I32),
    since(4, STR),
    since(4, I32),
    since(4, I16),
    since(4, STR),
]);
pub(super) const FIND_COORDINATOR: Message = Message {
    versions: (0, 6),
    flexible_from: 3,
    body: plain(&[
        since(1, I32),
        until(3, I16),
        between(1, 3, STR),
        until(3, I32),
        until(3, STR),
        until(3, I32),
        since(4, Kind::Array(&Kind::Struct(&COORDINATOR))),
    ]),
};

const JOIN_GROUP_MEMBER: Layout = plain(&[all(STR), since(5, STR), all(BYTES)]);
pub(super) const JOIN_GROUP: Message = Message {
    versions: (0, 9),
    flexible_from: 6,
    body: plain(&[
        since(2, I32),
        all(I16),
        all(I32),
        since(7, STR),
        all(STR),
        all(STR),
        since(9, I8),
        all(STR),
        all(Kind::Array(&Kind::Struct(&JOIN_GROUP_MEMBER))),
    ]),
};

pub(super) const SYNC_GROUP: Message = Message {
    versions: (0, 5),
    flexible_from: 4,
    body: plain(&[
        since(1, I32),
        all(I16),
        since(5, STR),
        since(5, STR),
        all(BYTES),
    ]),
};

pub(super) const HEARTBEAT: Message = Message {
    versions: (0, 4),
    flexible_from: 4,
    body: plain(&[since(1, I32), all(I16)]),
};

const LEAVE_GROUP_MEMBER: Layout = plain(&[since(3, STR), since(3, STR), since(3, I16)]);
pub(super) const LEAVE_GROUP: Message = Message {
    versions: (0, 5),
    flexible_from: 4,
    body: plain(&[
        since(1, I32),
        all(I16),
        since(3, Kind::Array(&Kind::Struct(&LEAVE_GROUP_MEMBER))),
    ]),
};

/// Up to v7 a response for one group; from v8 a list of groups.
const OFFSET_FETCH_PARTITION_V1: Layout = plain(&[
    until(7, I32),
    until(7, I64),
    between(5, 7, I32),
    until(7, STR),
    until(7, I16),
]);
const OFFSET_FETCH_TOPIC_V1: Layout = plain(&[
    until(7, STR),
    until(7, Kind::Array(&Kind::Struct(&OFFSET_FETCH_PARTITION_V1))),
]);
const OFFSET_FETCH_PARTITION_V8: Layout = plain(&[
    since(8, I32),
    since(8, I64),
    since(8, I32),
    since(8, STR),
    since(8, I16),
]);
const OFFSET_FETCH_TOPIC_V8: Layout = plain(&[
    between(8, 9, STR),
    since(10, UUID),
    since(8, Kind::Array(&Kind::Struct(&OFFSET_FETCH_PARTITION_V8))),
]);
const OFFSET_FETCH_GROUP: Layout = plain(&[
    since(8, STR),
    since(8, Kind::Array(&Kind::Struct(&OFFSET_FETCH_TOPIC_V8))),
    since(8, I16),
]);
pub(super) const OFFSET_FETCH: Message = Message {
    versions: (1, 10),
    flexible_from: 6,
    body: plain(&[
        since(3, I32),
        until(7, Kind::Array(&Kind::Struct(&OFFSET_FETCH_TOPIC_V1))),
        between(2, 7, I16),
        since(8, Kind::Array(&Kind::Struct(&OFFSET_FETCH_GROUP))),
    ]),
};

const OFFSET_COMMIT_PARTITION: Layout = plain(&[all(I32), all(I16)]);
const OFFSET_COMMIT_TOPIC: Layout = plain(&[
    until(9, STR),
    since(10, UUID),
    all(Kind::Array(&Kind::Struct(&OFFSET_COMMIT_PARTITION))),
]);
pub(super) const OFFSET_COMMIT: Message = Message {
    versions: (2, 10),
    flexible_from: 8,
    body: plain(&[
        since(3, I32),
        all(Kind::Array(&Kind::Struct(&OFFSET_COMMIT_TOPIC))),
    ]),
};

const TOPIC_PARTITIONS: Layout = plain(&[all(UUID), all(I32_ARRAY)]);
const ASSIGNMENT: Layout = plain(&[all(Kind::Array(&Kind::Struct(&TOPIC_PARTITIONS)))]);
pub(super) const CONSUMER_GROUP_HEARTBEAT: Message = Message {
    versions: (0, 1),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(I16),
        all(STR),
        all(STR),
        all(I32),
        all(I32),
        all(Kind::OptionalStruct(&ASSIGNMENT)),
    ]),
};

pub(super) const SASL_HANDSHAKE: Message = Message {
    versions: (0, 1),
    flexible_from: NEVER,
    body: plain(&[all(I16), all(Kind::Array(&STR))]),
};

pub(super) const SASL_AUTHENTICATE: Message = Message {
    versions: (0, 2),
    flexible_from: 2,
    body: plain(&[all(I16), all(STR), all(BYTES), since(1, I64)]),
};

const LISTED_GROUP: Layout = plain(&[all(STR), all(STR), since(4, STR), since(5, STR)]);
pub(super) const LIST_GROUPS: Message = Message {
    versions: (0, 5),
    flexible_from: 3,
    body: plain(&[
        since(1, I32),
        all(I16),
        all(Kind::Array(&Kind::Struct(&LISTED_GROUP))),
    ]),
};

const DESCRIBED_GROUP_MEMBER: Layout = plain(&[
    all(STR),
    since(4, STR),
    all(STR),
    all(STR),
    all(BYTES),
    all(BYTES),
]);
const DESCRIBED_GROUP: Layout = plain(&[
    all(I16),
    since(6, STR),
    all(STR),
    all(STR),
    all(STR),
    all(STR),
    all(Kind::Array(&Kind::Struct(&DESCRIBED_GROUP_MEMBER))),
    since(3, I32),
]);
pub(super) const DESCRIBE_GROUPS: Message = Message {
    versions: (0, 6),
    flexible_from: 5,
    body: plain(&[
        since(1, I32),
        all(Kind::Array(&Kind::Struct(&DESCRIBED_GROUP))),
    ]),
};

const NAMED_TOPIC_PARTITIONS: Layout = plain(&[all(UUID), all(STR), all(I32_ARRAY)]);
const NAMED_ASSIGNMENT: Layout = plain(&[all(Kind::Array(&Kind::Struct(&NAMED_TOPIC_PARTITIONS)))]);
const CONSUMER_GROUP_MEMBER: Layout = plain(&[
    all(STR),
    all(STR),
    all(STR),
    all(I32),
    all(STR),
    all(STR),
    all(Kind::Array(&STR)),
    all(STR),
    all(Kind::Struct(&NAMED_ASSIGNMENT)),
    all(Kind::Struct(&NAMED_ASSIGNMENT)),
    since(1, I8),
]);
const CONSUMER_GROUP_DESCRIBED: Layout = plain(&[
    all(I16),
    all(STR),
    all(STR),
    all(STR),
    all(I32),
    all(I32),
    all(STR),
    all(Kind::Array(&Kind::Struct(&CONSUMER_GROUP_MEMBER))),
    all(I32),
]);
pub(super) const CONSUMER_GROUP_DESCRIBE: Message = Message {
    versions: (0, 1),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(Kind::Array(&Kind::Struct(&CONSUMER_GROUP_DESCRIBED))),
    ]),
};

const SHARE_GROUP_MEMBER: Layout = plain(&[
    all(STR),
    all(STR),
    all(I32),
    all(STR),
    all(STR),
    all(Kind::Array(&STR)),
    all(Kind::Struct(&NAMED_ASSIGNMENT)),
]);
const SHARE_GROUP_DESCRIBED: Layout = plain(&[
    all(I16),
    all(STR),
    all(STR),
    all(STR),
    all(I32),
    all(I32),
    all(STR),
    all(Kind::Array(&Kind::Struct(&SHARE_GROUP_MEMBER))),
    all(I32),
]);
pub(super) const SHARE_GROUP_DESCRIBE: Message = Message {
    versions: (1, 1),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(Kind::Array(&Kind::Struct(&SHARE_GROUP_DESCRIBED))),
    ]),
};

const SHARE_OFFSETS_PARTITION: Layout = plain(&[all(I32), all(I64), all(I32), all(I16), all(STR)]);
const SHARE_OFFSETS_TOPIC: Layout = plain(&[
    all(STR),
    all(UUID),
    all(Kind::Array(&Kind::Struct(&SHARE_OFFSETS_PARTITION))),
]);
const SHARE_OFFSETS_GROUP: Layout = plain(&[
    all(STR),
    all(Kind::Array(&Kind::Struct(&SHARE_OFFSETS_TOPIC))),
    all(I16),
    all(STR),
]);
pub(super) const DESCRIBE_SHARE_GROUP_OFFSETS: Message = Message {
    versions: (0, 0),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(Kind::Array(&Kind::Struct(&SHARE_OFFSETS_GROUP))),
    ]),
};

pub(super) const SHARE_GROUP_HEARTBEAT: Message = Message {
    versions: (1, 1),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(I16),
        all(STR),
        all(STR),
        all(I32),
        all(I32),
        all(Kind::OptionalStruct(&ASSIGNMENT)),
    ]),
};

const SHARE_LEADER: Layout = plain(&[all(I32), all(I32)]);
const SHARE_NODE_ENDPOINT: Layout = plain(&[all(I32), all(STR), all(I32), all(STR)]);
const ACQUIRED_RECORDS: Layout = plain(&[all(I64), all(I64), all(I16)]);
const SHARE_FETCH_PARTITION: Layout = plain(&[
    all(I32),
    all(I16),
    all(STR),
    all(I16),
    all(STR),
    all(Kind::Struct(&SHARE_LEADER)),
    all(BYTES),
    all(Kind::Array(&Kind::Struct(&ACQUIRED_RECORDS))),
]);
const SHARE_FETCH_TOPIC: Layout = plain(&[
    all(UUID),
    all(Kind::Array(&Kind::Struct(&SHARE_FETCH_PARTITION))),
]);
pub(super) const SHARE_FETCH: Message = Message {
    versions: (1, 1),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(I16),
        all(STR),
        all(I32),
        all(Kind::Array(&Kind::Struct(&SHARE_FETCH_TOPIC))),
        all(Kind::Array(&Kind::Struct(&SHARE_NODE_ENDPOINT))),
    ]),
};

const SHARE_ACKNOWLEDGE_PARTITION: Layout = plain(&[
    all(I32),
    all(I16),
    all(STR),
    all(Kind::Struct(&SHARE_LEADER)),
]);
const SHARE_ACKNOWLEDGE_TOPIC: Layout = plain(&[
    all(UUID),
    all(Kind::Array(&Kind::Struct(&SHARE_ACKNOWLEDGE_PARTITION))),
]);
pub(super) const SHARE_ACKNOWLEDGE: Message = Message {
    versions: (1, 1),
    flexible_from: 0,
    body: plain(&[
        all(I32),
        all(I16),
        all(STR),
        all(Kind::Array(&Kind::Struct(&SHARE_ACKNOWLEDGE_TOPIC))),
        all(Kind::Array(&Kind::Struct(&SHARE_NODE_ENDPOINT))),
    ]),
};

pub(super) const INIT_PRODUCER_ID: Message = Message {
    versions: (0, 6),
    flexible_from: 2,
    body: plain(&[
        all(I32),
        all(I16),
        all(I64),
        all(I16),
        since(6, I64),
        since(6, I16),
    ]),
};

const PRODUCE_RECORD_ERROR: Layout = plain(&[since(8, I32), since(8, STR)]);
const PRODUCE_LEADER: Layout = plain(&[all(I32), all(I32)]);
const PRODUCE_PARTITION: Layout = Layout {
    fields: &[
        all(I32),
        all(I16),
        all(I64),
        all(I64),
        since(5, I64),
        since(8, Kind::Array(&Kind::Struct(&PRODUCE_RECORD_ERROR))),
        since(8, STR),
    ],
    tags: &[Tag {
        tag: 0,
        from: 10,
        kind: Kind::Struct(&PRODUCE_LEADER),
    }],
};
const PRODUCE_TOPIC: Layout = plain(&[
    until(12, STR),
    since(13, UUID),
    all(Kind::Array(&Kind::Struct(&PRODUCE_PARTITION))),
]);
const PRODUCE_NODE_ENDPOINT: Layout = plain(&[all(I32), all(STR), all(I32), all(STR)]);
pub(super) const PRODUCE: Message = Message {
    versions: (3, 13),
    flexible_from: 9,
    body: Layout {
        fields: &[all(Kind::Array(&Kind::Struct(&PRODUCE_TOPIC))), all(I32)],
        tags: &[Tag {
            tag: 0,
            from: 10,
            kind: Kind::Array(&Kind::Struct(&PRODUCE_NODE_ENDPOINT)),
        }],
    },
};
