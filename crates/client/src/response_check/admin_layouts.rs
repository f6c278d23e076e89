//! The layouts of the admin responses a mirror reads from its target (CreateTopics,
//! DescribeConfigs, CreatePartitions), field by field in wire order, for the versions
//! kafka-protocol decodes (from Kafka's message definitions).

use super::{all, plain, since, Kind, Layout, Message, Tag, I16, I32, I8, STR, UUID};

/// A created topic's configuration, sent back from v5 on.
const CREATED_TOPIC_CONFIG: Layout = plain(&[
    since(5, STR),
    since(5, STR),
    since(5, I8),
    since(5, I8),
    since(5, I8),
]);
const CREATED_TOPIC: Layout = Layout {
    fields: &[
        all(STR),
        since(7, UUID),
        all(I16),
        all(STR),
        since(5, I32),
        since(5, I16),
        since(5, Kind::Array(&Kind::Struct(&CREATED_TOPIC_CONFIG))),
    ],
    // TopicConfigErrorCode: why the configs could not be sent back.
    tags: &[Tag {
        tag: 0,
        from: 5,
        kind: I16,
    }],
};
pub(super) const CREATE_TOPICS: Message = Message {
    versions: (2, 7),
    flexible_from: 5,
    body: plain(&[all(I32), all(Kind::Array(&Kind::Struct(&CREATED_TOPIC)))]),
};

const CONFIG_SYNONYM: Layout = plain(&[all(STR), all(STR), all(I8)]);
const CONFIG_ENTRY: Layout = plain(&[
    all(STR),
    all(STR),
    all(I8),
    all(I8),
    all(I8),
    all(Kind::Array(&Kind::Struct(&CONFIG_SYNONYM))),
    since(3, I8),
    since(3, STR),
]);
const CONFIG_RESOURCE: Layout = plain(&[
    all(I16),
    all(STR),
    all(I8),
    all(STR),
    all(Kind::Array(&Kind::Struct(&CONFIG_ENTRY))),
]);
pub(super) const DESCRIBE_CONFIGS: Message = Message {
    versions: (1, 4),
    flexible_from: 4,
    body: plain(&[all(I32), all(Kind::Array(&Kind::Struct(&CONFIG_RESOURCE)))]),
};

const PARTITIONS_RESULT: Layout = plain(&[all(STR), all(I16), all(STR)]);
pub(super) const CREATE_PARTITIONS: Message = Message {
    versions: (0, 3),
    flexible_from: 2,
    body: plain(&[
        all(I32),
        all(Kind::Array(&Kind::Struct(&PARTITIONS_RESULT))),
    ]),
};
