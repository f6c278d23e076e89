//! The member's subscription as it stands: its names, and what its patterns match now.

use super::Classic;
use crate::refresh;

impl Classic {
    /// The topics this member subscribes to now: the names, then what the patterns match.
    pub(super) fn subscribed_topics(&self) -> Vec<String> {
        let mut topics = self.session.subscription.names().to_vec();
        for topic in self.matched.keys() {
            if !topics.contains(topic) {
                topics.push(topic.clone());
            }
        }
        topics
    }

    /// With patterns: looks at the cluster's topics again; true when the patterns now match
    /// other topics or partitions (the member must rejoin to say so). A failed look keeps the
    /// last answer.
    pub(super) async fn refresh_subscription(&mut self) -> bool {
        let session = &self.session;
        if !session.subscription.has_patterns() {
            return false;
        }
        let now = match refresh::look_up(&session.metadata, &session.subscription, &self.matched)
            .await
        {
            Ok(now) => now,
            Err(error) => {
                tracing::warn!(%error, "looking up the subscribed topics failed; trying again later");
                return false;
            }
        };
        session.set_matched_topics(now.keys().map(String::as_str));
        let changed = now != self.matched;
        self.matched = now;
        if changed {
            tracing::info!(topics = ?self.subscribed_topics(), "subscribed topics changed");
        }
        changed
    }
}
