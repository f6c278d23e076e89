//! The rustls client configuration built once from a [`TlsConfig`], and TLS failures told in
//! words a person can act on.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::config::{config_error, Pem, TlsConfig};
use crate::Error;

/// Largest PEM file read (a CA bundle of a few hundred certificates fits many times over).
const MAX_PEM_BYTES: u64 = 4 << 20;

/// The TLS library and the crypto provider every connection uses, as `krec version -v` says.
pub const TLS_PROVIDER: &str = "rustls (ring)";

/// The crypto provider every TLS connection uses (see BENCHMARKS.md, TLS).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the client configuration: roots, verifier, client certificate.
pub(crate) fn client_config(tls: &TlsConfig) -> Result<Arc<rustls::ClientConfig>, Error> {
    let provider = provider();
    let verifier = verifier(tls, provider.clone())?;
    let mut versions = Vec::with_capacity(2);
    if tls.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    if tls.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| config_error("ssl.enabled.protocols", e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&tls.certificate, &tls.key) {
        (Some(certificate), Some(key)) => {
            let chain = certificates(certificate, "ssl.certificate.location")?;
            let key = private_key(key, tls.key_password.as_ref().map(|p| p.expose()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| config_error("ssl.key.location", format!("client key: {e}")))?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

fn verifier(tls: &TlsConfig, provider: Arc<CryptoProvider>) -> Result<Arc<Verifier>, Error> {
    let (roots, roots_source) = match &tls.ca {
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for certificate in certificates(pem, "ssl.ca.location")? {
                roots.add(certificate).map_err(|e| {
                    config_error("ssl.ca.location", format!("unusable CA certificate: {e}"))
                })?;
            }
            (roots, pem_name(pem))
        }
        None => (system_roots()?, "the system's CA certificates".to_owned()),
    };
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| config_error("ssl.ca.location", e.to_string()))?;
    if !tls.verify_certificate {
        tracing::warn!(
            "TLS certificate verification is off (enable.ssl.certificate.verification=false): \
             anyone on the network can pose as the broker"
        );
    } else if !tls.verify_hostname {
        tracing::warn!(
            "TLS host name verification is off (ssl.endpoint.identification.algorithm=none): \
             any certificate of the CA can pose as the broker"
        );
    }
    Ok(Arc::new(Verifier {
        webpki,
        provider,
        roots_source,
        verify_certificate: tls.verify_certificate,
        verify_hostname: tls.verify_hostname,
    }))
}

fn system_roots() -> Result<RootCertStore, Error> {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::debug!(%error, "skipping a system CA certificate source");
    }
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(config_error(
            "ssl.ca.location",
            "no system CA certificates found; name the broker's CA file".to_owned(),
        ));
    }
    Ok(roots)
}

fn pem_name(pem: &Pem) -> String {
    match pem {
        Pem::File(path) => path.display().to_string(),
        Pem::Text(_) => "the inline CA certificates".to_owned(),
    }
}

/// The PEM's bytes: the file read (bounded) or the inline text.
fn pem_bytes(pem: &Pem, property: &str) -> Result<Vec<u8>, Error> {
    match pem {
        Pem::Text(text) => Ok(text.expose().as_bytes().to_vec()),
        Pem::File(path) => {
            let read = || -> std::io::Result<Vec<u8>> {
                let file = std::fs::File::open(path)?;
                if file.metadata()?.len() > MAX_PEM_BYTES {
                    return Err(std::io::Error::other("larger than 4 MiB: not a PEM file?"));
                }
                std::fs::read(path)
            };
            read().map_err(|e| config_error(property, format!("{}: {e}", path.display())))
        }
    }
}

fn certificates(pem: &Pem, property: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bytes = pem_bytes(pem, property)?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_error(property, format!("{}: {e}", pem_name(pem))))?;
    if certificates.is_empty() {
        return Err(config_error(
            property,
            format!("{}: no CERTIFICATE block", pem_name(pem)),
        ));
    }
    Ok(certificates)
}

/// A private key in PEM: PKCS#8, PKCS#1 or SEC1, or PKCS#8 encrypted under `password`.
fn private_key(pem: &Pem, password: Option<&str>) -> Result<PrivateKeyDer<'static>, Error> {
    const PROPERTY: &str = "ssl.key.location";
    let bytes = pem_bytes(pem, PROPERTY)?;
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(config_error(
            PROPERTY,
            "a legacy OpenSSL-encrypted key is not supported; convert it to encrypted PKCS#8 \
             (openssl pkcs8 -topk8 -v2 aes-256-cbc -in key.pem -out key.p8.pem) or decrypt it"
                .to_owned(),
        ));
    }
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return decrypt_pkcs8(&text, password);
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        config_error(
            PROPERTY,
            format!("no PKCS#8, PKCS#1 or SEC1 private key found ({e})"),
        )
    })
}

fn decrypt_pkcs8(text: &str, password: Option<&str>) -> Result<PrivateKeyDer<'static>, Error> {
    const PROPERTY: &str = "ssl.key.password";
    let Some(password) = password else {
        return Err(config_error(
            PROPERTY,
            "the client key is encrypted: set ssl.key.password".to_owned(),
        ));
    };
    let block = text
        .find("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        .map(|start| &text[start..])
        .unwrap_or(text);
    let (_, document) = pkcs8::SecretDocument::from_pem(block)
        .map_err(|e| config_error("ssl.key.location", format!("encrypted key: {e}")))?;
    let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
        .map_err(|e| config_error("ssl.key.location", format!("encrypted key: {e}")))?;
    let decrypted = encrypted.decrypt(password).map_err(|_| {
        config_error(
            PROPERTY,
            "cannot decrypt the client key: wrong password or unsupported cipher".to_owned(),
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        decrypted.as_bytes().to_vec(),
    )))
}

/// WebPKI verification, with the checks the configuration turned off skipped, and an
/// untrusted issuer named in the error.
#[derive(Debug)]
struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
    roots_source: String,
    verify_certificate: bool,
    verify_hostname: bool,
}

/// A certificate chain that does not lead to a trusted root, told with its names.
#[derive(Debug, thiserror::Error)]
#[error("the broker's certificate ({subject}) is issued by {issuer}, which is not trusted by {roots}: set ssl.ca.location to that CA's certificate")]
pub(crate) struct UntrustedIssuer {
    subject: String,
    issuer: String,
    roots: String,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !self.verify_certificate {
            return Ok(ServerCertVerified::assertion());
        }
        let verified = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            // webpki checks the chain before the name: a name error means the chain is good.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.verify_hostname => Ok(ServerCertVerified::assertion()),
            Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
                let (subject, issuer) = names(end_entity);
                Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                    rustls::OtherError(Arc::new(UntrustedIssuer {
                        subject,
                        issuer,
                        roots: self.roots_source.clone(),
                    })),
                )))
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Subject and issuer of a DER certificate, for messages.
fn names(certificate: &CertificateDer<'_>) -> (String, String) {
    match x509_parser::parse_x509_certificate(certificate.as_ref()) {
        Ok((_, parsed)) => (parsed.subject().to_string(), parsed.issuer().to_string()),
        Err(_) => ("unparsable".to_owned(), "an unknown issuer".to_owned()),
    }
}

/// A name rustls lists as `DnsName("host")` or `IpAddress(..)`, as the bare name.
fn presented_name(name: &str) -> &str {
    name.split_once("(\"")
        .and_then(|(_, rest)| rest.strip_suffix("\")"))
        .unwrap_or(name)
}

/// What a failed TLS handshake or TLS read means for the person running krec.
pub(crate) fn describe(error: &rustls::Error) -> String {
    use rustls::AlertDescription as Alert;
    match error {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => other.0.to_string(),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected,
            presented,
        }) => format!(
            "host name mismatch: the broker's certificate is for {} but we connected to {:?} \
             (ssl.endpoint.identification.algorithm=none turns the check off)",
            presented
                .iter()
                .map(|name| presented_name(name))
                .collect::<Vec<_>>()
                .join(", "),
            expected.to_str()
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => {
            "host name mismatch: the broker's certificate is not for the host connected to"
                .to_owned()
        }
        rustls::Error::InvalidCertificate(CertificateError::Expired) => {
            "the broker's certificate has expired".to_owned()
        }
        rustls::Error::AlertReceived(
            alert @ (Alert::BadCertificate
            | Alert::UnknownCA
            | Alert::CertificateRequired
            | Alert::CertificateUnknown
            | Alert::AccessDenied
            | Alert::DecryptError),
        ) => format!(
            "the broker refused our client certificate (TLS alert {alert:?}): it needs one \
             signed by a CA it trusts (ssl.certificate.location, ssl.key.location)"
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::secret::Secret;

    #[test]
    fn missing_and_empty_pem_files_name_the_property() {
        let tls = TlsConfig {
            ca: Some(Pem::File("/nonexistent/ca.pem".into())),
            ..TlsConfig::default()
        };
        let error = client_config(&tls).unwrap_err().to_string();
        assert!(
            error.contains("ssl.ca.location") && error.contains("/nonexistent/ca.pem"),
            "{error}"
        );
        let tls = TlsConfig {
            ca: Some(Pem::Text(Secret::new("not pem".into()))),
            ..TlsConfig::default()
        };
        let error = client_config(&tls).unwrap_err().to_string();
        assert!(error.contains("no CERTIFICATE block"), "{error}");
    }

    #[test]
    fn a_legacy_encrypted_key_is_refused_with_the_conversion() {
        let key = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        let error = private_key(&Pem::Text(Secret::new(key.into())), Some("pw"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("openssl pkcs8 -topk8"), "{error}");
    }
}
