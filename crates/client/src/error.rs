//! The crate's one error enum.

use crate::TopicPartition;

/// Everything that can go wrong talking to Kafka brokers, with the broker and request it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A TCP connection to a broker could not be opened or broke while in use.
    #[error("broker {broker}: {action}: {source}")]
    Connection {
        /// `host:port` of the broker.
        broker: String,
        /// What the client was doing (connecting, sending a request, reading a response).
        action: &'static str,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A broker did not answer within the allowed time.
    #[error("broker {broker}: no response to {api} within {timeout_ms} ms")]
    Timeout {
        /// `host:port` of the broker.
        broker: String,
        /// The request that timed out.
        api: &'static str,
        /// The time limit that passed.
        timeout_ms: u64,
    },

    /// A broker sent bytes that do not follow the Kafka protocol.
    #[error("broker {broker}: malformed {api} response: {detail}")]
    Protocol {
        /// `host:port` of the broker.
        broker: String,
        /// The request whose response was malformed.
        api: &'static str,
        /// What was wrong.
        detail: String,
    },

    /// A response frame announced more bytes than the configured bound allows.
    #[error("broker {broker}: response frame of {size} bytes exceeds the {max} byte limit")]
    FrameTooLarge {
        /// `host:port` of the broker.
        broker: String,
        /// The size announced on the wire.
        size: i64,
        /// The configured bound.
        max: usize,
    },

    /// The broker does not speak any version of an API that this client supports.
    #[error("broker {broker}: no common version of {api} (broker {broker_min}..={broker_max}, ours {ours_min}..={ours_max})")]
    UnsupportedVersion {
        /// `host:port` of the broker.
        broker: String,
        /// The API.
        api: &'static str,
        /// Lowest version the broker speaks.
        broker_min: i16,
        /// Highest version the broker speaks.
        broker_max: i16,
        /// Lowest version we speak.
        ours_min: i16,
        /// Highest version we speak.
        ours_max: i16,
    },

    /// A broker answered with an error code that the client cannot recover from.
    #[error("broker {broker}: {api}{}: error {code} ({name}){}", subject_text(topic.as_deref(), *partition), acl_hint(*code, api, topic.as_deref()))]
    Broker {
        /// `host:port` or node id of the broker.
        broker: String,
        /// The request.
        api: &'static str,
        /// Topic concerned, when the error is about one.
        topic: Option<String>,
        /// Partition concerned, when the error is about one.
        partition: Option<i32>,
        /// Kafka's error code.
        code: i16,
        /// Kafka's name for the error code.
        name: String,
    },

    /// A group coordinator answered with an error about one group.
    #[error("broker {broker}: {api} for group {group:?}: error {code} ({name}){}{}", detail_text(detail.as_deref()), group_acl_hint(*code, group))]
    Group {
        /// `host:port` or node id of the broker.
        broker: String,
        /// The request.
        api: &'static str,
        /// The group id.
        group: String,
        /// Kafka's error code.
        code: i16,
        /// Kafka's name for the error code.
        name: String,
        /// The broker's own words about the error, when it sent any.
        detail: Option<String>,
    },

    /// A broker refused an admin request about one topic (DescribeConfigs, CreatePartitions),
    /// in its own words when it sent any.
    #[error("broker {broker}: {api} for topic {topic:?}: error {code} ({name}){}{}", detail_text(message.as_deref()), admin_acl_hint(*code, api, topic))]
    TopicRefused {
        /// `host:port` of the broker.
        broker: String,
        /// The request.
        api: &'static str,
        /// The topic.
        topic: String,
        /// Kafka's error code.
        code: i16,
        /// Kafka's name for the error code (`INVALID_PARTITIONS`).
        name: String,
        /// The broker's message, when it sent one.
        message: Option<String>,
    },

    /// OffsetFetch asking for stable offsets found a transaction still committing offsets of
    /// the group (UNSTABLE_OFFSET_COMMIT). Retriable: the transaction ends (commit, abort or
    /// its timeout), so the same request succeeds after a short wait.
    #[error("broker {broker}: OffsetFetch for group {group:?}{}: error 88 (UNSTABLE_OFFSET_COMMIT): a transaction is still committing its offsets; ask again shortly", unstable_subject(partition.as_ref()))]
    UnstableOffsetCommit {
        /// `host:port` of the broker.
        broker: String,
        /// The group id.
        group: String,
        /// The partition the broker named, when it named one.
        partition: Option<TopicPartition>,
    },

    /// None of the bootstrap brokers could be reached.
    #[error("no bootstrap broker reachable ({brokers}): last error: {last}")]
    NoBroker {
        /// The bootstrap list that was tried.
        brokers: String,
        /// The error of the last attempt.
        last: Box<Error>,
    },

    /// The topic does not exist in the cluster.
    #[error("unknown topic {topic:?} (the cluster has no topic of that name)")]
    UnknownTopic {
        /// The topic that was asked for.
        topic: String,
    },

    /// The TLS handshake or a TLS read failed: an untrusted or mismatched certificate, a
    /// refused client certificate, a protocol error.
    #[error("broker {broker}: TLS: {detail}")]
    Tls {
        /// `host:port` of the broker.
        broker: String,
        /// What failed, and what to change.
        detail: String,
    },

    /// The connection's protocol does not match the listener's (TLS to a plaintext port, or
    /// plaintext to a TLS port).
    #[error("broker {broker}: {detail}")]
    WrongSecurityProtocol {
        /// `host:port` of the broker.
        broker: String,
        /// What was seen, and what to change.
        detail: String,
    },

    /// The broker refused the SASL credentials, or the exchange failed.
    #[error(
        "broker {broker}: SASL {mechanism} authentication{} failed: {detail}",
        identity_text(identity)
    )]
    Authentication {
        /// `host:port` of the broker.
        broker: String,
        /// The SASL mechanism.
        mechanism: &'static str,
        /// Who tried (a user name or a token's source; never a secret).
        identity: String,
        /// The broker's message, or what was wrong in its answer.
        detail: String,
    },

    /// The broker's listener does not offer the configured SASL mechanism.
    #[error("broker {broker}: SASL mechanism {mechanism} is not enabled on this listener (it offers {})", enabled.join(", "))]
    MechanismNotEnabled {
        /// `host:port` of the broker.
        broker: String,
        /// The mechanism asked for.
        mechanism: &'static str,
        /// The mechanisms the listener offers.
        enabled: Vec<String>,
    },

    /// A security property is invalid, unknown or unsupported (its value is never shown).
    #[error("invalid property {property}: {detail}")]
    Config {
        /// The property's name.
        property: String,
        /// What is wrong, and how to fix it.
        detail: String,
    },

    /// A command-line or configuration value is invalid.
    #[error("invalid {what}: {detail}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// Why it is invalid.
        detail: String,
    },
}

impl Error {
    /// The connection broke or a response did not come in time: worth a new connection and a
    /// retry, unlike an answer the broker gave.
    pub fn is_connection_failure(&self) -> bool {
        matches!(self, Self::Connection { .. } | Self::Timeout { .. })
    }

    /// A security failure: wrong credentials, certificates or settings, or a missing ACL.
    /// Retrying cannot help; a person must change something.
    pub fn is_security_failure(&self) -> bool {
        match self {
            Self::Tls { .. }
            | Self::WrongSecurityProtocol { .. }
            | Self::Authentication { .. }
            | Self::MechanismNotEnabled { .. }
            | Self::Config { .. } => true,
            Self::Broker { code, .. }
            | Self::Group { code, .. }
            | Self::TopicRefused { code, .. } => is_authorization_code(*code),
            Self::NoBroker { last, .. } => last.is_security_failure(),
            _ => false,
        }
    }
}

/// TOPIC_, GROUP_ and CLUSTER_AUTHORIZATION_FAILED.
pub(crate) fn is_authorization_code(code: i16) -> bool {
    matches!(code, 29..=31)
}

fn identity_text(identity: &str) -> String {
    if identity.is_empty() {
        String::new()
    } else {
        format!(" as {identity}")
    }
}

/// Which ACL an authorization error asks for, as the operation and resource `kafka-acls`
/// takes.
fn acl_hint(code: i16, api: &str, topic: Option<&str>) -> String {
    let operation = match api {
        "Metadata" | "ListOffsets" | "OffsetFetch" if code == 29 => "Describe",
        "FindCoordinator" | "OffsetFetch" if code == 30 => "Describe",
        _ => "Read",
    };
    match code {
        29 => format!(
            ": the principal lacks the ACL {operation} on Topic:{}",
            topic.unwrap_or("<topic>")
        ),
        30 => format!(": the principal lacks the ACL {operation} on the consumer group"),
        31 => format!(": the principal lacks an ACL on the Cluster resource for {api}"),
        _ => String::new(),
    }
}

/// Which ACL a group request refused for authorization asks for.
fn group_acl_hint(code: i16, group: &str) -> String {
    match code {
        30 => format!(": the principal lacks the ACL Describe on Group:{group}"),
        29 => {
            ": the principal lacks the ACL Describe on a topic the group has offsets in".to_owned()
        }
        31 => ": the principal lacks the ACL Describe on the Cluster resource".to_owned(),
        69 => ": the cluster has no group of that id".to_owned(),
        _ => String::new(),
    }
}

/// Which ACL an admin request refused for authorization asks for.
fn admin_acl_hint(code: i16, api: &str, topic: &str) -> String {
    let operation = match api {
        "CreateTopics" => "Create",
        "CreatePartitions" => "Alter",
        _ => "DescribeConfigs",
    };
    match code {
        29 => format!(": the principal lacks the ACL {operation} on Topic:{topic}"),
        _ => String::new(),
    }
}

fn unstable_subject(partition: Option<&TopicPartition>) -> String {
    partition.map_or_else(String::new, |p| format!(" at {p}"))
}

fn detail_text(detail: Option<&str>) -> String {
    detail.map_or_else(String::new, |detail| format!(" ({detail})"))
}

/// What a broker error is about, for its message: ` for TOPIC/PARTITION`, ` for TOPIC`, or
/// nothing.
fn subject_text(topic: Option<&str>, partition: Option<i32>) -> String {
    match (topic, partition) {
        (Some(topic), Some(partition)) => format!(" for {topic}/{partition}"),
        (Some(topic), None) => format!(" for {topic}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    fn broker_error(topic: Option<&str>, partition: Option<i32>, code: i16) -> String {
        Error::Broker {
            broker: "b:1".to_owned(),
            api: "Fetch",
            topic: topic.map(str::to_owned),
            partition,
            code,
            name: crate::error_name(code),
        }
        .to_string()
    }

    #[test]
    fn a_broker_error_names_only_what_it_is_about() {
        assert_eq!(
            broker_error(Some("t"), Some(3), 2),
            "broker b:1: Fetch for t/3: error 2 (CORRUPT_MESSAGE)"
        );
        assert_eq!(
            broker_error(Some("t"), None, 2),
            "broker b:1: Fetch for t: error 2 (CORRUPT_MESSAGE)"
        );
        assert_eq!(
            broker_error(None, None, 2),
            "broker b:1: Fetch: error 2 (CORRUPT_MESSAGE)"
        );
    }

    #[test]
    fn a_group_authorization_error_names_the_group_acl() {
        let error = Error::Group {
            broker: "b:1".to_owned(),
            api: "DescribeGroups",
            group: "billing".to_owned(),
            code: 30,
            name: crate::error_name(30),
            detail: None,
        };
        assert_eq!(
            error.to_string(),
            "broker b:1: DescribeGroups for group \"billing\": error 30 \
             (GROUP_AUTHORIZATION_FAILED): the principal lacks the ACL Describe on Group:billing"
        );
        assert!(error.is_security_failure());
    }

    #[test]
    fn an_admin_refusal_names_the_topic_its_words_and_the_acl() {
        let refused = |api, code: i16, message: Option<&str>| Error::TopicRefused {
            broker: "b:1".to_owned(),
            api,
            topic: "t".to_owned(),
            code,
            name: crate::error_name(code),
            message: message.map(str::to_owned),
        };
        let error = refused(
            "CreatePartitions",
            37,
            Some("Topic already has 3 partitions."),
        );
        assert_eq!(
            error.to_string(),
            "broker b:1: CreatePartitions for topic \"t\": error 37 (INVALID_PARTITIONS) \
             (Topic already has 3 partitions.)"
        );
        assert!(!error.is_security_failure());
        let error = refused("CreatePartitions", 29, None);
        assert!(
            error
                .to_string()
                .ends_with("lacks the ACL Alter on Topic:t"),
            "{error}"
        );
        assert!(error.is_security_failure());
        let error = refused("DescribeConfigs", 29, None);
        assert!(
            error
                .to_string()
                .ends_with("lacks the ACL DescribeConfigs on Topic:t"),
            "{error}"
        );
    }

    #[test]
    fn an_unstable_offset_commit_names_the_group_and_partition() {
        let unstable = Error::UnstableOffsetCommit {
            broker: "b:1".to_owned(),
            group: "mirror".to_owned(),
            partition: Some(crate::TopicPartition::new("t", 2)),
        };
        let text = unstable.to_string();
        assert!(text.contains("group \"mirror\" at t/2"), "{text}");
        assert!(!unstable.is_security_failure() && !unstable.is_connection_failure());
    }

    #[test]
    fn an_authorization_error_says_which_acl_is_missing() {
        assert_eq!(
            broker_error(Some("t"), Some(3), 29),
            "broker b:1: Fetch for t/3: error 29 (TOPIC_AUTHORIZATION_FAILED): the principal \
             lacks the ACL Read on Topic:t"
        );
        assert!(broker_error(None, None, 31).contains("Cluster resource for Fetch"));
        let error = Error::Broker {
            broker: "b:1".to_owned(),
            api: "Fetch",
            topic: None,
            partition: None,
            code: 29,
            name: String::new(),
        };
        assert!(error.is_security_failure());
        assert!(!error.is_connection_failure());
    }
}
