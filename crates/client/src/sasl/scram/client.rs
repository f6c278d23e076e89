//! SCRAM-SHA-256 and SCRAM-SHA-512 client (RFC 5802, RFC 7677) as Kafka brokers speak it.
//!
//! One [`ScramClient`] per authentication: [`ScramClient::client_first`], then
//! [`ScramClient::handle_server_first`] (which answers with the client-final message), then
//! [`ScramClient::handle_server_final`], which succeeds only once the server has proved it
//! knows the password. Any fault ends the exchange; a later call is [`ScramFault::OutOfOrder`].
//!
//! What Kafka fixes that the RFCs leave open: no channel binding (gs2 header `n,,`), no
//! authorization id, and the password's UTF-8 bytes go into PBKDF2 as they are (Kafka's
//! `ScramFormatter` does no SASLprep, so neither do we). The broker compares the client-final
//! `r=` with its own combined nonce byte for byte, so we echo the server's nonce unchanged.
//!
//! `handle_server_first` runs PBKDF2 with the server's iteration count, up to
//! [`MAX_ITERATIONS`] rounds: call it off the async reactor (`spawn_blocking`).

use std::fmt;
use std::ops::RangeInclusive;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::digest::core_api::BlockSizeUser;
use hmac::{Mac, SimpleHmac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::security::secret::Secret;

/// Fewest PBKDF2 rounds accepted from a server: RFC 7677 section 4's minimum, which is also
/// the floor Kafka's own client and broker apply.
pub(crate) const MIN_ITERATIONS: u32 = 4096;
/// Most PBKDF2 rounds accepted: a hostile server cannot make one login burn more CPU than this.
pub(crate) const MAX_ITERATIONS: u32 = 1_000_000;
/// A server message longer than this is refused unparsed; Kafka's are about a hundred bytes.
pub(crate) const MAX_MESSAGE_LEN: usize = 8 * 1024;
/// Random bytes in the client nonce: 32 base64 characters, more than RFC 5802's advice.
const NONCE_BYTES: usize = 24;
/// Most characters of a server's `e=` text kept in [`ScramFault::Server`].
const MAX_ERROR_CHARS: usize = 256;
/// gs2 header: no channel binding, no authorization id.
const GS2_HEADER: &str = "n,,";
/// The client-final `c=`: base64 of [`GS2_HEADER`].
const CHANNEL_BINDING: &str = "c=biws";

/// A SCRAM mechanism Kafka offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (RFC 7677).
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramMechanism {
    /// The SASL mechanism name sent in SaslHandshake.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The server message a fault is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The server-first message (nonce, salt, iteration count).
    ServerFirst,
    /// The server-final message (verifier or error).
    ServerFinal,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::ServerFirst => "server-first message",
            Step::ServerFinal => "server-final message",
        })
    }
}

/// What a malformed message lacked where it went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The message is not UTF-8.
    Utf8,
    /// `r=` and a printable nonce.
    Nonce,
    /// `s=` and a non-empty base64 salt.
    Salt,
    /// `i=` and decimal digits.
    IterationCount,
    /// `v=` and a base64 signature, or `e=`.
    Verifier,
    /// An extension: one letter, `=`, a non-empty value.
    Extension,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Utf8 => "UTF-8 text",
            Part::Nonce => "the nonce `r=`",
            Part::Salt => "the salt `s=`",
            Part::IterationCount => "the iteration count `i=`",
            Part::Verifier => "the verifier `v=` or an error `e=`",
            Part::Extension => "an extension `x=value`",
        })
    }
}

/// Why a SCRAM exchange failed. Names the message and byte position; never holds the
/// password, the salted password, a key or a proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScramFault {
    /// The username is empty or holds a NUL character, which a saslname cannot carry.
    #[error("SCRAM username is empty or holds a NUL character")]
    Username,
    /// The OS random source could not give a nonce.
    #[error("SCRAM client nonce: the OS random source failed")]
    Random,
    /// A server message longer than [`MAX_MESSAGE_LEN`].
    #[error("SCRAM {step} of {len} bytes is longer than the {max} accepted")]
    TooLong {
        /// The message.
        step: Step,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The message does not follow RFC 5802's grammar at `position`.
    #[error("malformed SCRAM {step}: expected {expected} at byte {position}")]
    Malformed {
        /// The message.
        step: Step,
        /// What was expected there.
        expected: Part,
        /// Byte offset of the attribute (or byte) that is wrong.
        position: usize,
    },
    /// The server-first message starts with `m=`, an extension the client must understand.
    #[error("SCRAM server-first message demands an unknown mandatory extension `m=`")]
    MandatoryExtension,
    /// The server's nonce does not start with ours, or adds nothing to it.
    #[error("SCRAM server nonce does not extend the client nonce")]
    NonceNotExtended,
    /// The iteration count is outside the accepted range (saturated at `u64::MAX`).
    #[error("SCRAM iteration count {count} is outside {min}..={max}")]
    IterationCount {
        /// What the server asked for.
        count: u64,
        /// Fewest accepted.
        min: u32,
        /// Most accepted.
        max: u32,
    },
    /// A salt or signature that is not canonical, padded base64.
    #[error("SCRAM {step}: bad base64 in {part} at byte {position}")]
    Base64 {
        /// The message.
        step: Step,
        /// [`Part::Salt`] or [`Part::Verifier`].
        part: Part,
        /// Byte offset of the attribute.
        position: usize,
    },
    /// The server refused with `e=`; its text, cut to a few hundred characters.
    #[error("SCRAM server refused the authentication: e={0}")]
    Server(String),
    /// The server-final signature is not the one the password gives: the server does not
    /// hold this user's credential, or someone is in between.
    #[error("SCRAM server signature does not match")]
    ServerSignature,
    /// A message arrived when the exchange was not waiting for it (or had already ended).
    #[error("SCRAM {step} arrived out of order")]
    OutOfOrder {
        /// The message that came.
        step: Step,
    },
}

/// Where the exchange is.
enum State {
    /// `client_first` may be sent; the server-first message is next.
    AwaitServerFirst,
    /// The client-final went out; the server must answer with this signature.
    AwaitServerFinal { server_signature: Vec<u8> },
    /// The server proved itself.
    Done,
    /// A fault ended the exchange.
    Failed,
}

/// One SCRAM authentication, client side.
pub(crate) struct ScramClient {
    mechanism: ScramMechanism,
    password: Secret,
    /// `n=SASLNAME,r=NONCE`, part of the AuthMessage.
    client_first_bare: String,
    /// Where the nonce starts in `client_first_bare`.
    nonce_at: usize,
    iterations: RangeInclusive<u32>,
    state: State,
}

impl fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::AwaitServerFirst => "await server-first",
            State::AwaitServerFinal { .. } => "await server-final",
            State::Done => "done",
            State::Failed => "failed",
        };
        f.debug_struct("ScramClient")
            .field("mechanism", &self.mechanism)
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl ScramClient {
    /// A client for `username`, with a fresh nonce from the OS random source.
    pub(crate) fn new(
        mechanism: ScramMechanism,
        username: &str,
        password: &Secret,
    ) -> Result<ScramClient, ScramFault> {
        let mut random = [0u8; NONCE_BYTES];
        getrandom::fill(&mut random).map_err(|_| ScramFault::Random)?;
        // Standard base64 is printable ASCII without `,`, as RFC 5802's c-nonce must be.
        let nonce = STANDARD.encode(random);
        ScramClient::with_nonce(mechanism, username, password, &nonce)
    }

    /// A client with a chosen nonce, for test vectors. The nonce must be printable ASCII
    /// without `,`.
    pub(crate) fn with_nonce(
        mechanism: ScramMechanism,
        username: &str,
        password: &Secret,
        nonce: &str,
    ) -> Result<ScramClient, ScramFault> {
        if username.is_empty() || username.contains('\0') {
            return Err(ScramFault::Username);
        }
        let mut client_first_bare = String::with_capacity(username.len() + nonce.len() + 8);
        client_first_bare.push_str("n=");
        for c in username.chars() {
            match c {
                '=' => client_first_bare.push_str("=3D"),
                ',' => client_first_bare.push_str("=2C"),
                c => client_first_bare.push(c),
            }
        }
        client_first_bare.push_str(",r=");
        let nonce_at = client_first_bare.len();
        client_first_bare.push_str(nonce);
        Ok(ScramClient {
            mechanism,
            password: password.clone(),
            client_first_bare,
            nonce_at,
            iterations: MIN_ITERATIONS..=MAX_ITERATIONS,
            state: State::AwaitServerFirst,
        })
    }

    /// Accepts iteration counts in `range` instead of RFC 7677's; for the fuzz harness, whose
    /// every accepted server-first would otherwise cost thousands of HMACs.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn with_iteration_range(mut self, range: RangeInclusive<u32>) -> ScramClient {
        self.iterations = range;
        self
    }

    /// True once the server-final message verified.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn is_complete(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// True once the client-final went out and the server-final is next.
    pub(crate) fn awaits_server_final(&self) -> bool {
        matches!(self.state, State::AwaitServerFinal { .. })
    }

    fn client_nonce(&self) -> &str {
        &self.client_first_bare[self.nonce_at..]
    }

    /// The client-first message: `n,,n=USER,r=NONCE`.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        let mut message = Vec::with_capacity(GS2_HEADER.len() + self.client_first_bare.len());
        message.extend_from_slice(GS2_HEADER.as_bytes());
        message.extend_from_slice(self.client_first_bare.as_bytes());
        message
    }

    /// Checks the server-first message and returns the client-final message.
    pub(crate) fn handle_server_first(&mut self, message: &[u8]) -> Result<Vec<u8>, ScramFault> {
        if !matches!(self.state, State::AwaitServerFirst) {
            self.state = State::Failed;
            return Err(ScramFault::OutOfOrder {
                step: Step::ServerFirst,
            });
        }
        match self.server_first(message) {
            Ok((client_final, server_signature)) => {
                self.state = State::AwaitServerFinal { server_signature };
                Ok(client_final)
            }
            Err(fault) => {
                self.state = State::Failed;
                Err(fault)
            }
        }
    }

    /// Checks the server-final message: `Ok` only if the server's signature is the one the
    /// password gives.
    pub(crate) fn handle_server_final(&mut self, message: &[u8]) -> Result<(), ScramFault> {
        let State::AwaitServerFinal { server_signature } =
            std::mem::replace(&mut self.state, State::Failed)
        else {
            return Err(ScramFault::OutOfOrder {
                step: Step::ServerFinal,
            });
        };
        server_final(message, &server_signature)?;
        self.state = State::Done;
        Ok(())
    }

    /// The client-final message for a server-first, and the signature the server-final
    /// must carry.
    fn server_first(&self, message: &[u8]) -> Result<(Vec<u8>, Vec<u8>), ScramFault> {
        let text = text(message, Step::ServerFirst)?;
        let first = self.parse_server_first(text)?;
        Ok(self.client_final(text, &first))
    }

    /// Reads the server-first: no error or mandatory extension, our nonce extended, a salt,
    /// an iteration count within the configured range.
    fn parse_server_first<'t>(&self, text: &'t str) -> Result<ServerFirst<'t>, ScramFault> {
        let step = Step::ServerFirst;
        let mut attributes = Attributes::new(text);
        let (at, first) = attributes.next().unwrap_or((0, ""));
        if let Some(error) = first.strip_prefix("e=") {
            return Err(server_error(error));
        }
        if first.starts_with("m=") {
            return Err(ScramFault::MandatoryExtension);
        }
        let malformed = |expected, position| ScramFault::Malformed {
            step,
            expected,
            position,
        };

        let nonce = first
            .strip_prefix("r=")
            .filter(|n| !n.is_empty() && n.bytes().all(is_printable))
            .ok_or(malformed(Part::Nonce, at))?;
        let ours = self.client_nonce();
        if nonce.len() <= ours.len() || !nonce.starts_with(ours) {
            return Err(ScramFault::NonceNotExtended);
        }

        let (at, raw) = attributes.next().unwrap_or((text.len(), ""));
        let salt = raw
            .strip_prefix("s=")
            .filter(|s| !s.is_empty())
            .ok_or(malformed(Part::Salt, at))?;
        let salt = STANDARD.decode(salt).map_err(|_| ScramFault::Base64 {
            step,
            part: Part::Salt,
            position: at,
        })?;

        let (at, raw) = attributes.next().unwrap_or((text.len(), ""));
        let iterations = self.iteration_count(raw, at)?;

        extensions(attributes, step)?;
        Ok(ServerFirst {
            nonce,
            salt,
            iterations,
        })
    }

    /// The `i=` attribute `raw` (at `at`): decimal digits naming a count within range.
    fn iteration_count(&self, raw: &str, at: usize) -> Result<u32, ScramFault> {
        let digits = raw
            .strip_prefix("i=")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .ok_or(ScramFault::Malformed {
                step: Step::ServerFirst,
                expected: Part::IterationCount,
                position: at,
            })?;
        let count = digits.bytes().fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        });
        u32::try_from(count)
            .ok()
            .filter(|i| self.iterations.contains(i))
            .ok_or(ScramFault::IterationCount {
                count,
                min: *self.iterations.start(),
                max: *self.iterations.end(),
            })
    }

    /// The client-final message (with its proof) answering the server-first `text`, and the
    /// server signature the salted password gives.
    fn client_final(&self, text: &str, first: &ServerFirst<'_>) -> (Vec<u8>, Vec<u8>) {
        let nonce = first.nonce;
        let mut client_final = String::with_capacity(CHANNEL_BINDING.len() + nonce.len() + 100);
        client_final.push_str(CHANNEL_BINDING);
        client_final.push_str(",r=");
        client_final.push_str(nonce);
        let auth_message = [
            self.client_first_bare.as_bytes(),
            b",",
            text.as_bytes(),
            b",",
            client_final.as_bytes(),
        ]
        .concat();
        let password = self.password.expose().as_bytes();
        let (salt, iterations) = (&first.salt, first.iterations);
        let keys = match self.mechanism {
            ScramMechanism::Sha256 => {
                let mut salted = Zeroizing::new([0u8; 32]);
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut *salted);
                Keys::derive::<Sha256>(&*salted, &auth_message)
            }
            ScramMechanism::Sha512 => {
                let mut salted = Zeroizing::new([0u8; 64]);
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut *salted);
                Keys::derive::<Sha512>(&*salted, &auth_message)
            }
        };
        client_final.push_str(",p=");
        STANDARD.encode_string(&*keys.proof, &mut client_final);
        (client_final.into_bytes(), keys.server_signature)
    }
}

/// What a server-first message says, checked.
struct ServerFirst<'t> {
    /// The client's nonce extended by the server's.
    nonce: &'t str,
    salt: Vec<u8>,
    iterations: u32,
}

/// What the salted password yields for one AuthMessage (RFC 5802 section 3).
struct Keys {
    /// ClientKey XOR ClientSignature.
    proof: Zeroizing<Vec<u8>>,
    /// HMAC(ServerKey, AuthMessage): what the server-final must carry.
    server_signature: Vec<u8>,
}

impl Keys {
    fn derive<D: Digest + BlockSizeUser + Clone>(salted: &[u8], auth_message: &[u8]) -> Keys {
        let client_key = hmac::<D>(salted, b"Client Key");
        let mut stored_key = D::digest(&*client_key);
        let client_signature = hmac::<D>(&stored_key, auth_message);
        stored_key.as_mut_slice().zeroize();
        let proof = Zeroizing::new(
            client_key
                .iter()
                .zip(client_signature.iter())
                .map(|(k, s)| k ^ s)
                .collect(),
        );
        let server_key = hmac::<D>(salted, b"Server Key");
        let server_signature = hmac::<D>(&server_key, auth_message).to_vec();
        Keys {
            proof,
            server_signature,
        }
    }
}

/// HMAC with hash `D`, wiped when dropped.
fn hmac<D: Digest + BlockSizeUser + Clone>(key: &[u8], data: &[u8]) -> Zeroizing<Vec<u8>> {
    // HMAC takes a key of any length (RFC 2104 section 2): this cannot fail, whatever the input.
    let mut mac = <SimpleHmac<D> as Mac>::new_from_slice(key).expect("HMAC keys of any length");
    mac.update(data);
    let mut out = mac.finalize().into_bytes();
    let copy = Zeroizing::new(out.to_vec());
    out.as_mut_slice().zeroize();
    copy
}

/// Checks a server-final message against the signature the password gives.
fn server_final(message: &[u8], expected: &[u8]) -> Result<(), ScramFault> {
    let step = Step::ServerFinal;
    let text = text(message, step)?;
    let mut attributes = Attributes::new(text);
    let (at, first) = attributes.next().unwrap_or((0, ""));
    if let Some(error) = first.strip_prefix("e=") {
        return Err(server_error(error));
    }
    let signature =
        first
            .strip_prefix("v=")
            .filter(|s| !s.is_empty())
            .ok_or(ScramFault::Malformed {
                step,
                expected: Part::Verifier,
                position: at,
            })?;
    let signature = STANDARD.decode(signature).map_err(|_| ScramFault::Base64 {
        step,
        part: Part::Verifier,
        position: at,
    })?;
    extensions(attributes, step)?;
    // Constant time in the contents; a length difference is no secret.
    if bool::from(signature.ct_eq(expected)) {
        Ok(())
    } else {
        Err(ScramFault::ServerSignature)
    }
}

/// The message as text, once its length and encoding are checked.
fn text(message: &[u8], step: Step) -> Result<&str, ScramFault> {
    if message.len() > MAX_MESSAGE_LEN {
        return Err(ScramFault::TooLong {
            step,
            len: message.len(),
            max: MAX_MESSAGE_LEN,
        });
    }
    std::str::from_utf8(message).map_err(|e| ScramFault::Malformed {
        step,
        expected: Part::Utf8,
        position: e.valid_up_to(),
    })
}

/// Trailing extensions, which RFC 5802 says a client ignores: each still has to be one.
fn extensions(attributes: Attributes<'_>, step: Step) -> Result<(), ScramFault> {
    for (at, raw) in attributes {
        let bytes = raw.as_bytes();
        let well_formed = bytes.len() > 2
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b'='
            && !bytes.contains(&0);
        if !well_formed {
            return Err(ScramFault::Malformed {
                step,
                expected: Part::Extension,
                position: at,
            });
        }
    }
    Ok(())
}

/// A server's `e=` text, bounded and without control characters.
fn server_error(text: &str) -> ScramFault {
    ScramFault::Server(
        text.chars()
            .take(MAX_ERROR_CHARS)
            .map(|c| if c.is_control() { '\u{fffd}' } else { c })
            .collect(),
    )
}

/// RFC 5802 `printable`: ASCII 0x21..=0x7E except `,`.
fn is_printable(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && b != b','
}

/// The `,`-separated attributes of a message, each with its byte offset.
struct Attributes<'a> {
    rest: Option<&'a str>,
    at: usize,
}

impl<'a> Attributes<'a> {
    fn new(text: &'a str) -> Attributes<'a> {
        Attributes {
            rest: Some(text),
            at: 0,
        }
    }
}

impl<'a> Iterator for Attributes<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let rest = self.rest?;
        let at = self.at;
        match rest.split_once(',') {
            Some((attribute, tail)) => {
                self.rest = Some(tail);
                self.at += attribute.len() + 1;
                Some((at, attribute))
            }
            None => {
                self.rest = None;
                Some((at, rest))
            }
        }
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
