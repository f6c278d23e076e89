//! The token cache every fetched token source shares (OIDC, AWS): one token for all of a
//! process's connections, fetched again once most of its life has passed, with retries while
//! the source is down and the current token still serves.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Mutex;

use super::BearerToken;
use crate::sasl::BoxError;

/// Refresh once this share of a token's life has passed, as librdkafka and the Java client do.
const REFRESH_AT: f64 = 0.8;
/// The longest pause between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Why a fetch failed: worth trying again, or not (a person must change something).
#[derive(Debug)]
pub(crate) enum FetchError {
    /// The source is down or busy.
    Retriable(BoxError),
    /// The source refused us (a wrong secret, an unknown client); retrying cannot help.
    Fatal(BoxError),
}

/// How hard to try when there is no token to fall back on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    /// The first pause; each next one doubles, up to [`MAX_BACKOFF`].
    pub(crate) initial_backoff: Duration,
    /// Give up once this much time has passed since the first attempt.
    pub(crate) give_up_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_millis(500),
            give_up_after: Duration::from_secs(30),
        }
    }
}

/// A cached token and when to fetch the next one.
#[derive(Debug)]
struct Cached {
    token: BearerToken,
    /// Fetch again from this point on.
    refresh_at: SystemTime,
    /// After a failed refresh: not before this point.
    retry_after: Option<Instant>,
}

/// One token shared by every caller; fetched by the first caller that finds it missing or old.
#[derive(Debug, Default)]
pub(crate) struct RefreshingToken {
    cached: Mutex<Option<Cached>>,
    policy: RetryPolicy,
}

impl RefreshingToken {
    /// An empty cache that retries as `policy` says.
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Self {
            cached: Mutex::new(None),
            policy,
        }
    }

    /// The cached token, or a fresh one from `fetch` when it is missing or past its refresh
    /// point. Callers that come while a fetch runs wait for it and share its token.
    pub(crate) async fn get<F, Fut>(&self, fetch: F) -> Result<BearerToken, BoxError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<BearerToken, FetchError>>,
    {
        let mut cached = self.cached.lock().await;
        if let Some(current) = cached.as_ref().filter(|c| c.serves_without_fetch()) {
            return Ok(current.token.clone());
        }
        let started = Instant::now();
        let mut backoff = self.policy.initial_backoff;
        for attempt in 1.. {
            let error = match fetch().await {
                Ok(token) => {
                    *cached = Some(Cached::new(token.clone()));
                    return Ok(token);
                }
                Err(FetchError::Fatal(error)) => return Err(error),
                Err(FetchError::Retriable(error)) => error,
            };
            if let Some(current) = cached.as_mut().filter(|c| c.is_valid()) {
                tracing::warn!(%error, "token refresh failed; the current token is still valid");
                current.retry_after = Some(Instant::now() + backoff);
                return Ok(current.token.clone());
            }
            if started.elapsed() + backoff > self.policy.give_up_after {
                let waited = started.elapsed().as_secs_f64();
                return Err(
                    format!("{error} (gave up after {attempt} attempts in {waited:.1} s)").into(),
                );
            }
            tracing::warn!(%error, attempt, retry_in = ?backoff, "token fetch failed; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        unreachable!("the attempts never run out")
    }
}

impl Cached {
    fn new(token: BearerToken) -> Self {
        let now = SystemTime::now();
        let refresh_at = match token.expires_at {
            Some(expires) => {
                let life = expires.duration_since(now).unwrap_or_default();
                now + life.mul_f64(REFRESH_AT)
            }
            None => SystemTime::UNIX_EPOCH,
        };
        Self {
            token,
            refresh_at,
            retry_after: None,
        }
    }

    /// Young enough, or its refresh failed a moment ago and it still holds.
    fn serves_without_fetch(&self) -> bool {
        let young = self.token.expires_at.is_some() && SystemTime::now() < self.refresh_at;
        let resting = self.retry_after.is_some_and(|t| Instant::now() < t) && self.is_valid();
        young || resting
    }

    fn is_valid(&self) -> bool {
        self.token.expires_at.is_some_and(|e| SystemTime::now() < e)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::security::secret::Secret;

    fn token(name: &str, life: Duration) -> BearerToken {
        BearerToken::new(Secret::new(name.to_owned())).expiring_at(SystemTime::now() + life)
    }

    fn quick() -> RetryPolicy {
        RetryPolicy {
            initial_backoff: Duration::from_millis(10),
            give_up_after: Duration::from_millis(100),
        }
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_fetch_until_the_refresh_point() {
        let cache = Arc::new(RefreshingToken::new(quick()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let fetch = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(token("a", Duration::from_millis(300)))
        };
        let (a, b) = tokio::join!(cache.get(fetch), cache.get(fetch));
        assert_eq!(a.unwrap().token.expose(), "a");
        assert_eq!(b.unwrap().token.expose(), "a");
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        // Past 80% of 300 ms, the next caller fetches again.
        tokio::time::sleep(Duration::from_millis(260)).await;
        cache.get(fetch).await.unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_fatal_error_is_not_retried_and_a_retriable_one_is_until_the_limit() {
        let cache = RefreshingToken::new(quick());
        let fetches = AtomicUsize::new(0);
        let fatal = cache
            .get(|| async {
                fetches.fetch_add(1, Ordering::SeqCst);
                Err(FetchError::Fatal("invalid_client".into()))
            })
            .await
            .unwrap_err();
        assert_eq!(fatal.to_string(), "invalid_client");
        assert_eq!(fetches.swap(0, Ordering::SeqCst), 1);
        let down = cache
            .get(|| async {
                fetches.fetch_add(1, Ordering::SeqCst);
                Err(FetchError::Retriable("connection refused".into()))
            })
            .await
            .unwrap_err();
        assert!(
            down.to_string()
                .starts_with("connection refused (gave up after"),
            "{down}"
        );
        assert!(fetches.load(Ordering::SeqCst) >= 3, "retried with backoff");
    }

    #[tokio::test]
    async fn a_valid_token_serves_while_its_source_is_down() {
        let cache = RefreshingToken::new(quick());
        cache
            .get(|| async { Ok(token("old", Duration::from_millis(500))) })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(420)).await;
        let fetches = AtomicUsize::new(0);
        let down = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            Err(FetchError::Retriable("503".into()))
        };
        assert_eq!(cache.get(down).await.unwrap().token.expose(), "old");
        assert_eq!(cache.get(down).await.unwrap().token.expose(), "old");
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "no new attempt within the backoff"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            cache.get(down).await.is_err(),
            "an expired token is not handed out"
        );
    }
}
