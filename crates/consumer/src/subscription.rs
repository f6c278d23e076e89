//! Topic subscriptions: topic names and regular expressions, matched against the cluster's
//! topics.
//!
//! kcat's convention: an entry that starts with `^` is a regular expression (the `regex`
//! crate's syntax), any other entry a topic name. A pattern is searched for in the topic name
//! ([`regex::Regex::is_match`], as librdkafka's `regexec` does): the leading `^` anchors its
//! start, and only a `$` anchors its end, so `^logs-` matches `logs-eu` and `^logs$` only
//! `logs`. Internal topics (flagged by the broker, or named `__...`, such as
//! `__consumer_offsets`) never match a pattern, only their name.
//!
//! ```
//! use krec_consumer::subscription::TopicSubscription;
//!
//! let subscription = TopicSubscription::parse(["orders", "^logs-(eu|us)"]).unwrap();
//! assert!(subscription.matches("orders", false));
//! assert!(subscription.matches("logs-eu-2", false));
//! assert!(!subscription.matches("app-logs-eu", false));
//! assert!(!subscription.matches("__consumer_offsets", true));
//! assert!(TopicSubscription::parse(["^logs-("]).is_err());
//! ```

use std::collections::BTreeMap;

use regex::Regex;

use crate::Error;
use krec_client::metadata::ClusterMetadata;

/// Bytes a compiled pattern may take (the `regex` crate's own default): a pattern that needs
/// more is refused when parsed, never grown into.
const PATTERN_SIZE_LIMIT: usize = 10 << 20;

/// What a consumer subscribes to: topic names, and patterns for topics matched by name.
#[derive(Clone, Debug, Default)]
pub struct TopicSubscription {
    names: Vec<String>,
    patterns: Vec<Regex>,
}

impl TopicSubscription {
    /// Reads kcat-style entries: each that starts with `^` is a regular expression, the others
    /// topic names. Blank entries are skipped; an invalid pattern is
    /// [`Error::InvalidArgument`].
    pub fn parse<I, S>(entries: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut subscription = Self::default();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            if entry.starts_with('^') {
                let regex = regex::RegexBuilder::new(entry)
                    .size_limit(PATTERN_SIZE_LIMIT)
                    .build()
                    .map_err(|error| Error::InvalidArgument {
                        what: "topic pattern",
                        detail: format!("{entry:?}: {error}"),
                    })?;
                if !subscription.patterns.iter().any(|p| p.as_str() == entry) {
                    subscription.patterns.push(regex);
                }
            } else if !subscription.names.iter().any(|n| n == entry) {
                subscription.names.push(entry.to_owned());
            }
        }
        Ok(subscription)
    }

    /// The topic names, in the order given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The patterns as written, in the order given.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(Regex::as_str)
    }

    /// True when some entry is a pattern (the matched set can change over time).
    pub fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// True when there is neither a name nor a pattern.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.patterns.is_empty()
    }

    /// True when `topic` is one of the names.
    pub(crate) fn is_named(&self, topic: &str) -> bool {
        self.names.iter().any(|n| n == topic)
    }

    /// True when the subscription takes `topic`: it is named, or it is not internal and a
    /// pattern matches it. `is_internal` is the Metadata response's flag.
    pub fn matches(&self, topic: &str, is_internal: bool) -> bool {
        if self.is_named(topic) {
            return true;
        }
        !is_internal_topic(topic, is_internal) && self.patterns.iter().any(|p| p.is_match(topic))
    }

    /// The topics of `metadata` the subscription takes, with their partition ids. Topics the
    /// broker answered with an error, or that have no partitions yet (still being created),
    /// are left out: a later look finds them.
    pub(crate) fn select(&self, metadata: &ClusterMetadata) -> BTreeMap<String, Vec<i32>> {
        metadata
            .topics
            .values()
            .filter(|topic| topic.error_code == 0 && !topic.partitions.is_empty())
            .filter(|topic| self.matches(&topic.name, topic.is_internal))
            .map(|topic| {
                let partitions = topic.partitions.iter().map(|p| p.partition).collect();
                (topic.name.clone(), partitions)
            })
            .collect()
    }

    /// The patterns as one regular expression for a broker that matches it against whole
    /// topic names (KIP-848's `SubscribedTopicRegex`, evaluated by the broker with RE2/J's
    /// `matches()`): an alternation of the patterns with `.*` on both sides, so the broker
    /// takes the same names a search for any one of them finds. None without patterns.
    pub(crate) fn broker_regex(&self) -> Option<String> {
        if self.patterns.is_empty() {
            return None;
        }
        let alternatives: Vec<String> = self
            .patterns
            .iter()
            .map(|p| format!("(?:{})", p.as_str()))
            .collect();
        Some(format!(".*(?:{}).*", alternatives.join("|")))
    }
}

/// True for a topic that is Kafka's own: flagged internal by the broker, or named with the
/// `__` prefix Kafka keeps for itself (`__consumer_offsets`, `__transaction_state`,
/// `__share_group_state`, ...).
pub(crate) fn is_internal_topic(topic: &str, flagged: bool) -> bool {
    flagged || topic.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;
    use krec_client::metadata::{PartitionMetadata, TopicMetadata};

    fn subscription(entries: &[&str]) -> TopicSubscription {
        TopicSubscription::parse(entries).unwrap()
    }

    #[test]
    fn entries_starting_with_a_caret_are_patterns() {
        let parsed = subscription(&["a", " ^b.* ", "", "a", "c"]);
        assert_eq!(parsed.names(), ["a".to_owned(), "c".to_owned()]);
        assert_eq!(parsed.patterns().collect::<Vec<_>>(), ["^b.*"]);
        assert!(parsed.has_patterns());
        assert!(!subscription(&["a"]).has_patterns());
        assert!(subscription(&["", " "]).is_empty());
    }

    #[test]
    fn patterns_are_searched_from_their_anchored_start() {
        let parsed = subscription(&["^logs-"]);
        assert!(parsed.matches("logs-eu", false));
        assert!(!parsed.matches("app-logs-eu", false));
        // The end is open unless the pattern closes it.
        assert!(subscription(&["^logs$"]).matches("logs", false));
        assert!(!subscription(&["^logs$"]).matches("logs-eu", false));
        // An alternation inside is searched as written, as librdkafka's regexec does.
        assert!(subscription(&["^a|b"]).matches("xbx", false));
    }

    #[test]
    fn internal_topics_match_only_by_name() {
        let everything = subscription(&["^.*"]);
        for internal in [
            "__consumer_offsets",
            "__transaction_state",
            "__share_group_state",
            "__anything",
        ] {
            assert!(!everything.matches(internal, false), "{internal}");
        }
        assert!(!everything.matches("flagged", true));
        assert!(everything.matches("_single_underscore", false));
        assert!(subscription(&["^.*", "__consumer_offsets"]).matches("__consumer_offsets", true));
        assert!(!subscription(&["^__consumer_offsets$"]).matches("__consumer_offsets", true));
    }

    #[test]
    fn invalid_patterns_are_refused_with_the_pattern_named() {
        let error = TopicSubscription::parse(["ok", "^logs-("])
            .unwrap_err()
            .to_string();
        assert!(error.contains("topic pattern"), "{error}");
        assert!(error.contains("^logs-("), "{error}");
        // A name is never parsed as a pattern, whatever it holds.
        assert!(TopicSubscription::parse(["logs-("]).is_ok());
    }

    fn topic(name: &str, partitions: i32, error_code: i16, is_internal: bool) -> TopicMetadata {
        TopicMetadata {
            name: name.to_owned(),
            topic_id: uuid::Uuid::nil(),
            error_code,
            is_internal,
            partitions: (0..partitions)
                .map(|partition| PartitionMetadata {
                    partition,
                    leader: 1,
                    leader_epoch: 0,
                    error_code: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn select_takes_matching_ready_topics_with_their_partitions() {
        let mut metadata = ClusterMetadata::default();
        for topic in [
            topic("logs-a", 2, 0, false),
            topic("logs-b", 0, 0, false),
            topic(
                "logs-c",
                1,
                krec_client::codes::UNKNOWN_TOPIC_OR_PARTITION,
                false,
            ),
            topic("logs-internal", 3, 0, true),
            topic("orders", 1, 0, false),
            topic("__consumer_offsets", 50, 0, true),
        ] {
            metadata.topics.insert(topic.name.clone(), topic);
        }
        let selected = subscription(&["^logs-", "orders"]).select(&metadata);
        let expected: BTreeMap<String, Vec<i32>> = [
            ("logs-a".to_owned(), vec![0, 1]),
            ("orders".to_owned(), vec![0]),
        ]
        .into_iter()
        .collect();
        assert_eq!(selected, expected);
    }

    #[test]
    fn the_broker_regex_matches_whole_names_as_the_patterns_search_them() {
        assert_eq!(subscription(&["a"]).broker_regex(), None);
        let parsed = subscription(&["^logs-", "^a|b$", "orders"]);
        let combined = parsed.broker_regex().unwrap();
        assert_eq!(combined, ".*(?:(?:^logs-)|(?:^a|b$)).*");
        // Full-name matching of the combined regex, as the broker does it, agrees with the
        // local search for every name (internal ones aside, which the broker decides).
        let whole = Regex::new(&format!("^(?:{combined})$")).unwrap();
        for name in ["logs-x", "xlogs-", "a1", "xab", "xa", "orders", "b", "c"] {
            let local = parsed.patterns.iter().any(|p| p.is_match(name));
            assert_eq!(whole.is_match(name), local, "{name}");
        }
    }
}
