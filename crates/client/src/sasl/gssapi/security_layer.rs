//! RFC 4752 §3.1, the step after the Kerberos context: the broker offers security layers in a
//! wrapped 4-byte message (a bit mask, then its largest buffer); the client answers, wrapped
//! too, with the layer it picks, its own largest buffer and an authorization identity.

/// The "no security layer" bit: Kafka protects the connection with TLS or not at all, and its
/// broker (Java's GSSAPI SaslServer with the default QOP `auth`) offers only this.
pub(super) const NO_SECURITY_LAYER: u8 = 0x01;
/// Length of the offer: the mask and a 3-byte size.
const OFFER_LEN: usize = 4;

/// Why an offer is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OfferFault {
    /// Not the 4 bytes RFC 4752 prescribes.
    Length(usize),
    /// The broker insists on integrity or confidentiality layers (this mask), which krec does
    /// not speak.
    LayerRequired(u8),
}

impl std::fmt::Display for OfferFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Length(len) => write!(
                f,
                "the broker's security-layer offer is {len} bytes, not {OFFER_LEN} (RFC 4752)"
            ),
            Self::LayerRequired(mask) => write!(
                f,
                "the broker requires a SASL security layer (offer mask {mask:#04x}); krec \
                 supports none: set the broker's sasl QOP to `auth` and use SASL_SSL for privacy"
            ),
        }
    }
}

/// Checks the broker's unwrapped offer: it must allow running without a security layer.
pub(super) fn check_offer(offer: &[u8]) -> Result<(), OfferFault> {
    if offer.len() != OFFER_LEN {
        return Err(OfferFault::Length(offer.len()));
    }
    if offer[0] & NO_SECURITY_LAYER == 0 {
        return Err(OfferFault::LayerRequired(offer[0]));
    }
    Ok(())
}

/// The client's answer before wrapping: no security layer, a largest buffer of 0 (RFC 4752:
/// it MUST be 0 without a layer), then `authzid`.
pub(super) fn answer(authzid: &[u8]) -> Vec<u8> {
    let mut answer = Vec::with_capacity(OFFER_LEN + authzid.len());
    answer.extend_from_slice(&[NO_SECURITY_LAYER, 0, 0, 0]);
    answer.extend_from_slice(authzid);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_offer_is_accepted() {
        // What Java's GssKrb5Server sends with QOP `auth` and its default 64 KiB buffer.
        assert_eq!(check_offer(&[0x01, 0x01, 0x00, 0x00]), Ok(()));
        // Any mask that includes "none" is fine, whatever else it offers.
        assert_eq!(check_offer(&[0x07, 0xff, 0xff, 0xff]), Ok(()));
    }

    #[test]
    fn offers_that_demand_a_layer_or_are_malformed_are_refused() {
        assert_eq!(
            check_offer(&[0x04, 0x01, 0x00, 0x00]),
            Err(OfferFault::LayerRequired(0x04))
        );
        assert_eq!(
            check_offer(&[0x06, 0, 0, 0]),
            Err(OfferFault::LayerRequired(0x06))
        );
        for len in [0, 1, 3, 5, 64] {
            assert_eq!(check_offer(&vec![1; len]), Err(OfferFault::Length(len)));
        }
        let message = OfferFault::LayerRequired(0x04).to_string();
        assert!(
            message.contains("auth") && message.contains("SASL_SSL"),
            "{message}"
        );
    }

    #[test]
    fn the_answer_picks_no_layer_with_size_zero_then_the_authzid() {
        assert_eq!(answer(b""), vec![0x01, 0, 0, 0]);
        assert_eq!(answer(b"alice"), b"\x01\0\0\0alice".to_vec());
    }
}
