//! Tests of `client`.
use super::*;

/// RFC 7677 section 3.
const RFC7677_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
const RFC7677_SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const RFC7677_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
     p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const RFC7677_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

fn rfc7677_client() -> ScramClient {
    let password = Secret::new("pencil".into());
    ScramClient::with_nonce(ScramMechanism::Sha256, "user", &password, RFC7677_NONCE).unwrap()
}

/// A client that has sent its client-final for the RFC 7677 exchange.
fn rfc7677_awaiting_final() -> ScramClient {
    let mut client = rfc7677_client();
    client
        .handle_server_first(RFC7677_SERVER_FIRST.as_bytes())
        .unwrap();
    client
}

fn first_fault(message: &[u8]) -> ScramFault {
    rfc7677_client().handle_server_first(message).unwrap_err()
}

#[test]
fn mechanism_names() {
    assert_eq!(ScramMechanism::Sha256.name(), "SCRAM-SHA-256");
    assert_eq!(ScramMechanism::Sha512.name(), "SCRAM-SHA-512");
}

#[test]
fn rfc7677_sha256_vector() {
    let mut client = rfc7677_client();
    assert_eq!(client.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let client_final = client
        .handle_server_first(RFC7677_SERVER_FIRST.as_bytes())
        .unwrap();
    assert_eq!(
        String::from_utf8(client_final).unwrap(),
        RFC7677_CLIENT_FINAL
    );
    assert!(!client.is_complete());
    client
        .handle_server_final(RFC7677_SERVER_FINAL.as_bytes())
        .unwrap();
    assert!(client.is_complete());
}

/// Fixture computed once with Python's hashlib.pbkdf2_hmac and hmac (SHA-512, 4096
/// rounds, salt bytes 1..=16); the username needs both saslname escapes and the password
/// is non-ASCII, sent as raw UTF-8 as Kafka does.
#[test]
fn sha512_fixture_with_escaped_username() {
    let password = Secret::new("p\u{e4}ss,w=rd".into());
    let mut client = ScramClient::with_nonce(
        ScramMechanism::Sha512,
        "al=ic,e",
        &password,
        "3mfAlsOBgq1Y0sW9hZ3kVjGZ",
    )
    .unwrap();
    assert_eq!(
        client.client_first(),
        b"n,,n=al=3Dic=2Ce,r=3mfAlsOBgq1Y0sW9hZ3kVjGZ"
    );
    let server_first =
        "r=3mfAlsOBgq1Y0sW9hZ3kVjGZZk9Qx7vLmT2pR8wE,s=AQIDBAUGBwgJCgsMDQ4PEA==,i=4096";
    let client_final = client.handle_server_first(server_first.as_bytes()).unwrap();
    assert_eq!(
        String::from_utf8(client_final).unwrap(),
        "c=biws,r=3mfAlsOBgq1Y0sW9hZ3kVjGZZk9Qx7vLmT2pR8wE,p=UuVguttKbFBjj56Gg67FJlv5Itk/\
         0ntubprPf7lB9UM6fZ0eu+oLK69b7dluMZFkNJsrXhZQlJEfH89xPsGr7w=="
    );
    client
        .handle_server_final(
            b"v=MESeU7PiaESNl7e7+UUZU/CuTU0CTRnMhF7HcdecShJ9EpeXFaGzLgCx1kPD5wCRsrcmZ/aw5gUD/T4iMZ4xWQ==",
        )
        .unwrap();
    assert!(client.is_complete());
}

/// The server's side of RFC 5802, written out here so the random-nonce client is checked
/// end to end: the server verifies the client's proof, the client the server's signature.
#[test]
fn sha512_round_trip_against_a_test_server() {
    let password = Secret::new("correct horse".into());
    let mut client = ScramClient::new(ScramMechanism::Sha512, "bob", &password).unwrap();
    let client_first = String::from_utf8(client.client_first()).unwrap();
    let bare = client_first.strip_prefix("n,,").unwrap();
    let client_nonce = bare.strip_prefix("n=bob,r=").unwrap();
    assert!(client_nonce.len() >= 24 && client_nonce.bytes().all(is_printable));

    let salt = b"kafka-test-salt!";
    let server_first = format!(
        "r={client_nonce}srv-part,s={},i=4096",
        STANDARD.encode(salt)
    );
    let client_final = client.handle_server_first(server_first.as_bytes()).unwrap();
    let client_final = String::from_utf8(client_final).unwrap();
    let (without_proof, proof) = client_final.split_once(",p=").unwrap();
    assert_eq!(without_proof, format!("c=biws,r={client_nonce}srv-part"));

    let mut salted = [0u8; 64];
    pbkdf2::pbkdf2_hmac::<Sha512>(b"correct horse", salt, 4096, &mut salted);
    let client_key = hmac::<Sha512>(&salted, b"Client Key");
    let stored_key = Sha512::digest(&*client_key);
    let auth_message = format!("{bare},{server_first},{without_proof}");
    let client_signature = hmac::<Sha512>(&stored_key, auth_message.as_bytes());
    let recovered_key: Vec<u8> = STANDARD
        .decode(proof)
        .unwrap()
        .iter()
        .zip(client_signature.iter())
        .map(|(p, s)| p ^ s)
        .collect();
    assert_eq!(
        Sha512::digest(&recovered_key),
        stored_key,
        "server accepts the proof"
    );

    let server_key = hmac::<Sha512>(&salted, b"Server Key");
    let signature = hmac::<Sha512>(&server_key, auth_message.as_bytes());
    let server_final = format!("v={}", STANDARD.encode(&*signature));
    client.handle_server_final(server_final.as_bytes()).unwrap();
    assert!(client.is_complete());
}

#[test]
fn nonces_differ_between_clients() {
    let password = Secret::new("x".into());
    let a = ScramClient::new(ScramMechanism::Sha256, "u", &password).unwrap();
    let b = ScramClient::new(ScramMechanism::Sha256, "u", &password).unwrap();
    assert_ne!(a.client_first(), b.client_first());
}

#[test]
fn username_must_be_a_saslname() {
    let password = Secret::new("x".into());
    for name in ["", "a\0b"] {
        let fault = ScramClient::new(ScramMechanism::Sha256, name, &password).unwrap_err();
        assert_eq!(fault, ScramFault::Username);
    }
}

#[test]
fn huge_iteration_count_is_refused_with_the_count() {
    let fault =
        first_fault(b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999999999999");
    assert_eq!(
        fault,
        ScramFault::IterationCount {
            count: u64::MAX,
            min: MIN_ITERATIONS,
            max: MAX_ITERATIONS,
        }
    );
    let fault = first_fault(b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000001");
    assert!(fault.to_string().contains("1000001"), "{fault}");
}

#[test]
fn iteration_count_below_rfc7677_minimum_is_refused() {
    for (count, text) in [(0, "0"), (4095, "4095"), (1, "0001")] {
        let message = format!("r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={text}");
        assert_eq!(
            first_fault(message.as_bytes()),
            ScramFault::IterationCount {
                count,
                min: MIN_ITERATIONS,
                max: MAX_ITERATIONS,
            }
        );
    }
}

#[test]
fn iteration_count_that_is_not_a_number_is_malformed() {
    for count in ["", "-4096", "4096x", " 4096", "4e3"] {
        let message = format!("r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={count}");
        assert_eq!(
            first_fault(message.as_bytes()),
            ScramFault::Malformed {
                step: Step::ServerFirst,
                expected: Part::IterationCount,
                position: 53,
            },
            "i={count}"
        );
    }
}

#[test]
fn missing_salt_is_malformed_at_its_position() {
    assert_eq!(
        first_fault(b"r=rOprNGfwEbeRWgbNEkqOsrv,i=4096"),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Salt,
            position: 26,
        }
    );
    assert_eq!(
        first_fault(b"r=rOprNGfwEbeRWgbNEkqOsrv,s=,i=4096"),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Salt,
            position: 26,
        }
    );
    assert_eq!(
        first_fault(b"r=rOprNGfwEbeRWgbNEkqOsrv"),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Salt,
            position: 25,
        }
    );
}

#[test]
fn missing_iteration_count_is_malformed() {
    assert_eq!(
        first_fault(b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ=="),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::IterationCount,
            position: 52,
        }
    );
}

#[test]
fn bad_base64_salt_is_refused() {
    for salt in [
        "!!!!",
        "W22ZaJ0SNY7soEsUEjb6gQ",
        "W22ZaJ0SNY7soEsUEjb6gQ=",
        "W2-_",
    ] {
        let message = format!("r=rOprNGfwEbeRWgbNEkqOsrv,s={salt},i=4096");
        assert_eq!(
            first_fault(message.as_bytes()),
            ScramFault::Base64 {
                step: Step::ServerFirst,
                part: Part::Salt,
                position: 26,
            },
            "s={salt}"
        );
    }
}

#[test]
fn nonce_not_extending_ours_is_refused() {
    for message in [
        // Someone else's nonce.
        "r=XXXXNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        // Our nonce with nothing added.
        "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        // A prefix of ours.
        "r=rOprNG,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    ] {
        assert_eq!(
            first_fault(message.as_bytes()),
            ScramFault::NonceNotExtended,
            "{message}"
        );
    }
}

#[test]
fn nonce_with_unprintable_bytes_is_malformed() {
    assert_eq!(
        first_fault(b"r=rOprNGfwEbeRWgbNEkqO s,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Nonce,
            position: 0,
        }
    );
}

#[test]
fn empty_message_is_malformed() {
    assert_eq!(
        first_fault(b""),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Nonce,
            position: 0,
        }
    );
    let mut client = rfc7677_awaiting_final();
    assert_eq!(
        client.handle_server_final(b"").unwrap_err(),
        ScramFault::Malformed {
            step: Step::ServerFinal,
            expected: Part::Verifier,
            position: 0,
        }
    );
}

#[test]
fn attributes_out_of_place_are_malformed() {
    assert_eq!(
        first_fault(b"s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOsrv,i=4096"),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Nonce,
            position: 0,
        }
    );
}

#[test]
fn non_utf8_message_is_malformed_at_the_bad_byte() {
    assert_eq!(
        first_fault(b"r=rOprNGfwEbeRWgbNEkqO\xff\xfe,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
        ScramFault::Malformed {
            step: Step::ServerFirst,
            expected: Part::Utf8,
            position: 22,
        }
    );
}

#[test]
fn very_long_message_is_refused_unparsed() {
    let mut message = b"r=rOprNGfwEbeRWgbNEkqO".to_vec();
    message.resize(MAX_MESSAGE_LEN + 1, b'x');
    assert_eq!(
        first_fault(&message),
        ScramFault::TooLong {
            step: Step::ServerFirst,
            len: MAX_MESSAGE_LEN + 1,
            max: MAX_MESSAGE_LEN,
        }
    );
    let mut client = rfc7677_awaiting_final();
    let huge = vec![b'v'; 1 << 20];
    assert!(matches!(
        client.handle_server_final(&huge),
        Err(ScramFault::TooLong {
            step: Step::ServerFinal,
            ..
        })
    ));
}

#[test]
fn mandatory_extension_is_refused() {
    assert_eq!(
        first_fault(b"m=something,r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
        ScramFault::MandatoryExtension
    );
}

#[test]
fn trailing_extensions_are_ignored_when_well_formed() {
    // The AuthMessage covers the message as sent, extensions included, so only the
    // client-final's nonce and form are checked here.
    let mut client = rfc7677_client();
    let message = format!("{RFC7677_SERVER_FIRST},x=ext=value,y=2");
    let client_final = client.handle_server_first(message.as_bytes()).unwrap();
    assert!(client_final.starts_with(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYD"));

    let mut client = rfc7677_awaiting_final();
    let message = format!("{RFC7677_SERVER_FINAL},z=later");
    client.handle_server_final(message.as_bytes()).unwrap();
}

#[test]
fn malformed_extensions_are_refused() {
    for (suffix, position) in [
        (",", 87),
        (",x=", 87),
        (",xy=1", 87),
        (",=1", 87),
        (",x", 87),
    ] {
        let message = format!("{RFC7677_SERVER_FIRST}{suffix}");
        assert_eq!(
            first_fault(message.as_bytes()),
            ScramFault::Malformed {
                step: Step::ServerFirst,
                expected: Part::Extension,
                position,
            },
            "{message}"
        );
    }
}

#[test]
fn server_error_in_either_message_is_reported() {
    assert_eq!(
        first_fault(b"e=unknown-user"),
        ScramFault::Server("unknown-user".into())
    );
    let mut client = rfc7677_awaiting_final();
    let fault = client
        .handle_server_final(b"e=invalid-proof,x=ext")
        .unwrap_err();
    assert_eq!(fault, ScramFault::Server("invalid-proof".into()));
    assert_eq!(
        fault.to_string(),
        "SCRAM server refused the authentication: e=invalid-proof"
    );
}

#[test]
fn server_error_text_is_bounded_and_printable() {
    let message = format!("e=bad\u{7}text{}", "x".repeat(5000));
    let ScramFault::Server(text) = first_fault(message.as_bytes()) else {
        panic!("expected a server error");
    };
    assert_eq!(text.chars().count(), MAX_ERROR_CHARS);
    assert!(text.starts_with("bad\u{fffd}text"));
}

#[test]
fn wrong_server_signature_is_refused() {
    let mut client = rfc7677_awaiting_final();
    assert_eq!(
        client
            .handle_server_final(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap_err(),
        ScramFault::ServerSignature
    );
    assert!(!client.is_complete());

    // A cut signature is a mismatch, not a partial match.
    let mut client = rfc7677_awaiting_final();
    assert_eq!(
        client.handle_server_final(b"v=6rriTRBi").unwrap_err(),
        ScramFault::ServerSignature
    );
    for bad in [&b"v=6rriTRBi23WpRR/wtup"[..], b"v=****", b"v=6rri TRBi"] {
        let mut client = rfc7677_awaiting_final();
        assert_eq!(
            client.handle_server_final(bad).unwrap_err(),
            ScramFault::Base64 {
                step: Step::ServerFinal,
                part: Part::Verifier,
                position: 0,
            }
        );
    }
}

#[test]
fn messages_out_of_order_are_refused() {
    let mut client = rfc7677_client();
    assert_eq!(
        client
            .handle_server_final(RFC7677_SERVER_FINAL.as_bytes())
            .unwrap_err(),
        ScramFault::OutOfOrder {
            step: Step::ServerFinal
        }
    );
    // The misplaced message ended the exchange.
    assert_eq!(
        client
            .handle_server_first(RFC7677_SERVER_FIRST.as_bytes())
            .unwrap_err(),
        ScramFault::OutOfOrder {
            step: Step::ServerFirst
        }
    );

    let mut client = rfc7677_awaiting_final();
    assert_eq!(
        client
            .handle_server_first(RFC7677_SERVER_FIRST.as_bytes())
            .unwrap_err(),
        ScramFault::OutOfOrder {
            step: Step::ServerFirst
        }
    );

    let mut client = rfc7677_awaiting_final();
    client
        .handle_server_final(RFC7677_SERVER_FINAL.as_bytes())
        .unwrap();
    assert_eq!(
        client
            .handle_server_final(RFC7677_SERVER_FINAL.as_bytes())
            .unwrap_err(),
        ScramFault::OutOfOrder {
            step: Step::ServerFinal
        }
    );
}

#[test]
fn a_fault_ends_the_exchange() {
    let mut client = rfc7677_client();
    client.handle_server_first(b"e=nope").unwrap_err();
    assert_eq!(
        client
            .handle_server_first(RFC7677_SERVER_FIRST.as_bytes())
            .unwrap_err(),
        ScramFault::OutOfOrder {
            step: Step::ServerFirst
        }
    );
    let mut client = rfc7677_awaiting_final();
    client.handle_server_final(b"v=AAAA").unwrap_err();
    assert_eq!(
        client
            .handle_server_final(RFC7677_SERVER_FINAL.as_bytes())
            .unwrap_err(),
        ScramFault::OutOfOrder {
            step: Step::ServerFinal
        }
    );
}

#[test]
fn no_fault_or_debug_text_holds_a_secret() {
    let password = Secret::new("pencil".into());
    let mut client =
        ScramClient::with_nonce(ScramMechanism::Sha256, "user", &password, RFC7677_NONCE).unwrap();
    assert!(!format!("{client:?}").contains("pencil"));
    let client_final = client
        .handle_server_first(RFC7677_SERVER_FIRST.as_bytes())
        .unwrap();
    let proof = String::from_utf8(client_final).unwrap();
    let proof = proof.split_once(",p=").unwrap().1.to_owned();
    let fault = client.handle_server_final(b"v=AAAA").unwrap_err();
    for text in [
        format!("{fault}"),
        format!("{fault:?}"),
        format!("{client:?}"),
    ] {
        assert!(!text.contains("pencil") && !text.contains(&proof), "{text}");
    }
}
