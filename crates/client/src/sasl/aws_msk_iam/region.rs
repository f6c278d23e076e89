//! The AWS region of an MSK broker, read from its host name.

use super::sign::check_region;

/// The DNS suffixes of AWS's partitions (commercial, China, the two isolated ones).
const SUFFIXES: [&str; 4] = [
    ".amazonaws.com",
    ".amazonaws.com.cn",
    ".c2s.ic.gov",
    ".sc2s.sgov.gov",
];

/// The region an MSK broker's host name names: the label before the partition's suffix, as in
/// `b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com` or MSK Serverless's
/// `boot-abc.c1.kafka-serverless.eu-west-1.amazonaws.com`. `broker` may carry a port. `None`
/// for any other host (a private DNS name, an address): then the region must be configured.
pub fn region_from_host(broker: &str) -> Option<&str> {
    let host = host_of(broker);
    let host = host.strip_suffix('.').unwrap_or(host);
    let before_suffix = SUFFIXES
        .iter()
        .find_map(|suffix| host.strip_suffix(suffix))?;
    let (_, region) = before_suffix.rsplit_once('.')?;
    let looks_like_region = check_region(region).is_ok()
        && region.contains('-')
        && region.ends_with(|c: char| c.is_ascii_digit());
    looks_like_region.then_some(region)
}

/// The host of `host:port` (or of `[v6]:port`), without the port.
pub(crate) fn host_of(broker: &str) -> &str {
    if let Some(rest) = broker.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match broker.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host
        }
        _ => broker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_of_msk_host_names() {
        let cases = [
            (
                "b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com:9098",
                Some("us-east-1"),
            ),
            (
                "b-2.demo.abc123.c2.kafka.eu-central-1.amazonaws.com",
                Some("eu-central-1"),
            ),
            (
                "boot-abcd1234.c1.kafka-serverless.ap-southeast-2.amazonaws.com:9098",
                Some("ap-southeast-2"),
            ),
            (
                "b-1.demo.abc.c3.kafka.cn-north-1.amazonaws.com.cn:9098",
                Some("cn-north-1"),
            ),
            (
                "b-1.demo.abc.c1.kafka.us-gov-west-1.amazonaws.com.:9098",
                Some("us-gov-west-1"),
            ),
            ("kafka.internal.example.com:9098", None),
            ("127.0.0.1:9098", None),
            ("[::1]:9098", None),
            ("amazonaws.com:9098", None),
            ("b-1.x.kafka.NotARegion.amazonaws.com", None),
        ];
        for (broker, region) in cases {
            assert_eq!(region_from_host(broker), region, "{broker}");
        }
    }

    #[test]
    fn host_without_port() {
        assert_eq!(host_of("b-1.x:9098"), "b-1.x");
        assert_eq!(host_of("b-1.x"), "b-1.x");
        assert_eq!(host_of("[::1]:9098"), "::1");
    }
}
