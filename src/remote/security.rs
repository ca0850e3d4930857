//! TLS (rustls) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 as in RFC 5802 / KIP-84) for
//! connections to external brokers.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use sha2::{Digest, Sha256, Sha512};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::connection::Connection;
use super::{BrokerAddress, RemoteError, SaslMechanism, SaslSettings, TlsSettings, error_name};

/// Wraps `tcp` (a socket, or a dialed stream) in TLS as `tls` says: the CA file's roots (else
/// the Mozilla roots), a client certificate when given, the server name from the settings or
/// else the broker's host.
pub(crate) async fn tls_connect<S: AsyncRead + AsyncWrite + Unpin>(
    tcp: S,
    address: &BrokerAddress,
    label: &str,
    tls: &TlsSettings,
) -> Result<TlsStream<S>, RemoteError> {
    let tls_error = |reason: String| RemoteError::Tls {
        address: label.to_string(),
        reason,
    };
    let config = client_config(tls).map_err(tls_error)?;
    let name = tls.server_name.clone().unwrap_or_else(|| address.host.clone());
    let server_name = ServerName::try_from(name.clone())
        .map_err(|e| tls_error(format!("{name:?} is not a valid server name: {e}")))?;
    TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| tls_error(format!("handshake failed: {e}")))
}

/// The rustls configuration for `tls`; errors name the file that could not be used.
fn client_config(tls: &TlsSettings) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let builder = if tls.verify {
        let mut roots = RootCertStore::empty();
        match &tls.ca_file {
            Some(path) => {
                for cert in read_certificates(path, "CA file")? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("CA file {}: a certificate is not usable: {e}", path.display()))?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots)
    } else {
        warn_unverified_once();
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    };
    match &tls.client_cert {
        Some((cert_path, key_path)) => {
            let chain = read_certificates(cert_path, "client certificate")?;
            let key = PrivateKeyDer::from_pem_file(key_path)
                .map_err(|e| format!("client key {}: {}", key_path.display(), pem_reason(&e)))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate {}: {e}", cert_path.display()))
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

fn read_certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{what} {}: {}", path.display(), pem_reason(&e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} {}: {}", path.display(), pem_reason(&e)))?;
    if certs.is_empty() {
        return Err(format!("{what} {}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

fn pem_reason(error: &rustls_pki_types::pem::Error) -> String {
    match error {
        rustls_pki_types::pem::Error::Io(e) => format!("cannot read it: {e}"),
        rustls_pki_types::pem::Error::NoItemsFound => "no PEM item of the expected kind in it".into(),
        other => format!("not valid PEM: {other:?}"),
    }
}

fn warn_unverified_once() {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!("TLS certificate verification is off: any server can pretend to be the brokers");
    }
}

/// `verify = false`: the broker's certificate is not checked (the handshake's signatures
/// still are, so the connection is encrypted to whoever holds the key it presented).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Kafka's error code for a mechanism the broker does not enable (it then lists its own).
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

/// SaslHandshake v1 naming the mechanism, then SaslAuthenticate rounds (KIP-152). Returns
/// how long the broker lets the session last (KIP-368), None when it does not limit it.
pub(crate) async fn authenticate(
    connection: &Connection,
    label: &str,
    sasl: &SaslSettings,
) -> Result<Option<Duration>, RemoteError> {
    let failed = |reason: String| RemoteError::Sasl {
        address: label.to_string(),
        reason,
    };
    let mechanism = sasl.mechanism.kafka_name();
    let handshake_version = connection
        .version(ApiKey::SaslHandshake)
        .ok_or_else(|| failed("the broker offers no SaslHandshake (is this a SASL listener?)".into()))?;
    if handshake_version < 1 {
        return Err(failed(
            "the broker only speaks SaslHandshake v0 (raw SASL tokens, before Kafka 1.0); kdeck needs v1".into(),
        ));
    }
    let handshake = connection
        .call(
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism)),
            handshake_version,
        )
        .await?;
    if handshake.error_code != 0 {
        let enabled: Vec<&str> = handshake.mechanisms.iter().map(|m| m.as_str()).collect();
        let reason = if handshake.error_code == UNSUPPORTED_SASL_MECHANISM {
            format!(
                "the broker does not enable {mechanism} (enabled: {})",
                enabled.join(", ")
            )
        } else {
            format!("SaslHandshake for {mechanism}: {}", error_name(handshake.error_code))
        };
        return Err(failed(reason));
    }
    let authenticate_version = connection
        .version(ApiKey::SaslAuthenticate)
        .ok_or_else(|| failed("the broker offers no SaslAuthenticate".into()))?;
    let round = |bytes: Vec<u8>| async move {
        let answer = connection
            .call(
                SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes)),
                authenticate_version,
            )
            .await?;
        if answer.error_code != 0 {
            let reason = answer
                .error_message
                .as_deref()
                .filter(|m| !m.is_empty())
                .map_or_else(|| error_name(answer.error_code), str::to_string);
            return Err(RemoteError::Sasl {
                address: label.to_string(),
                reason,
            });
        }
        Ok((answer.auth_bytes, answer.session_lifetime_ms))
    };
    let session_lifetime_ms = match sasl.mechanism {
        SaslMechanism::Plain => round(plain_message(&sasl.username, &sasl.password)).await?.1,
        SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
            let mut scram = ScramClient::new(sasl.mechanism, &sasl.username, &sasl.password).map_err(failed)?;
            let (server_first, _) = round(scram.client_first()).await?;
            let client_final = scram.client_final(&server_first).map_err(failed)?;
            let (server_final, lifetime) = round(client_final).await?;
            scram.verify_server_final(&server_final).map_err(failed)?;
            lifetime
        }
    };
    tracing::debug!(broker = label, mechanism, user = %sasl.username, session_lifetime_ms, "SASL authenticated");
    Ok(u64::try_from(session_lifetime_ms)
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis))
}

/// PLAIN's one message (RFC 4616): no authorization id, the user, the password.
pub fn plain_message(username: &str, password: &str) -> Vec<u8> {
    let mut message = Vec::with_capacity(username.len() + password.len() + 2);
    message.push(0);
    message.extend_from_slice(username.as_bytes());
    message.push(0);
    message.extend_from_slice(password.as_bytes());
    message
}

/// Kafka refuses SCRAM credentials with fewer iterations (ScramMechanism's minimum), so a
/// server asking for fewer is not a Kafka broker doing its job.
pub const SCRAM_MIN_ITERATIONS: u32 = 4096;

/// The client side of one SCRAM exchange (RFC 5802, no channel binding: gs2 header "n,,").
#[derive(Debug)]
pub struct ScramClient {
    mechanism: SaslMechanism,
    password: String,
    client_first_bare: String,
    nonce: String,
    /// Set by [`ScramClient::client_final`]: the signature the server must prove.
    expected_server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// A client with a fresh random nonce.
    pub fn new(mechanism: SaslMechanism, username: &str, password: &str) -> Result<ScramClient, String> {
        let mut random = [0u8; 24];
        getrandom::fill(&mut random).map_err(|e| format!("no randomness for the SCRAM nonce: {e}"))?;
        Ok(ScramClient::with_nonce(
            mechanism,
            username,
            password,
            &BASE64.encode(random),
        ))
    }

    /// A client with the given nonce (for test vectors).
    pub fn with_nonce(mechanism: SaslMechanism, username: &str, password: &str, nonce: &str) -> ScramClient {
        let user = username.replace('=', "=3D").replace(',', "=2C");
        ScramClient {
            mechanism,
            password: password.to_string(),
            client_first_bare: format!("n={user},r={nonce}"),
            nonce: nonce.to_string(),
            expected_server_signature: None,
        }
    }

    /// "n,,n=user,r=nonce".
    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// Answers the server-first message with the proof ("c=biws,r=...,p=...").
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let server_first = std::str::from_utf8(server_first)
            .map_err(|_| "the server's first SCRAM message is not UTF-8".to_string())?;
        if let Some(error) = attribute(server_first, 'e') {
            return Err(format!("the server refused: {error}"));
        }
        if server_first.starts_with("m=") {
            return Err("the server asks for a SCRAM extension kdeck does not know".into());
        }
        let nonce = attribute(server_first, 'r').ok_or("the server's first SCRAM message has no nonce")?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the server's SCRAM nonce does not extend ours".into());
        }
        let salt = attribute(server_first, 's')
            .and_then(|s| BASE64.decode(s).ok())
            .ok_or("the server's first SCRAM message has no valid salt")?;
        let iterations: u32 = attribute(server_first, 'i')
            .and_then(|i| i.parse().ok())
            .ok_or("the server's first SCRAM message has no valid iteration count")?;
        if iterations < SCRAM_MIN_ITERATIONS {
            return Err(format!(
                "the server asks for {iterations} SCRAM iterations; Kafka requires at least {SCRAM_MIN_ITERATIONS}"
            ));
        }
        let hash = self.mechanism;
        let salted = salted_password(hash, self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(hash, &salted, b"Client Key")?;
        let stored_key = digest(hash, &client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let client_signature = hmac(hash, &stored_key, auth_message.as_bytes())?;
        let proof: Vec<u8> = client_key.iter().zip(&client_signature).map(|(k, s)| k ^ s).collect();
        let server_key = hmac(hash, &salted, b"Server Key")?;
        self.expected_server_signature = Some(hmac(hash, &server_key, auth_message.as_bytes())?);
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server proves it knows the credentials too.
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let server_final = std::str::from_utf8(server_final)
            .map_err(|_| "the server's final SCRAM message is not UTF-8".to_string())?;
        if let Some(error) = attribute(server_final, 'e') {
            return Err(format!("the server refused: {error}"));
        }
        let expected = self
            .expected_server_signature
            .as_deref()
            .ok_or("the server's final SCRAM message came before its first")?;
        let signature = attribute(server_final, 'v')
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or("the server's final SCRAM message has no valid signature")?;
        if signature != expected {
            return Err("server signature does not match (the server does not know the credentials)".into());
        }
        Ok(())
    }
}

/// The value of `name=` in a SCRAM message (attributes separated by commas).
fn attribute(message: &str, name: char) -> Option<&str> {
    message.split(',').find_map(|part| {
        let mut chars = part.chars();
        (chars.next() == Some(name) && chars.next() == Some('=')).then(|| &part[2..])
    })
}

fn salted_password(hash: SaslMechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    match hash {
        SaslMechanism::ScramSha512 => {
            let mut out = [0u8; 64];
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
            out.to_vec()
        }
        _ => {
            let mut out = [0u8; 32];
            pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
            out.to_vec()
        }
    }
}

fn hmac(hash: SaslMechanism, key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let invalid = |e: hmac::digest::InvalidLength| format!("HMAC key: {e}");
    Ok(match hash {
        SaslMechanism::ScramSha512 => {
            let mut mac = Hmac::<Sha512>::new_from_slice(key).map_err(invalid)?;
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        _ => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(invalid)?;
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    })
}

fn digest(hash: SaslMechanism, data: &[u8]) -> Vec<u8> {
    match hash {
        SaslMechanism::ScramSha512 => Sha512::digest(data).to_vec(),
        _ => Sha256::digest(data).to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_user_and_password_after_nul_bytes() {
        assert_eq!(plain_message("alice", "s3cret"), b"\0alice\0s3cret".to_vec());
    }

    /// RFC 7677 section 3: the SCRAM-SHA-256 example exchange.
    #[test]
    fn scram_sha_256_matches_the_rfc_7677_example() {
        let mut client = ScramClient::with_nonce(SaslMechanism::ScramSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(client.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO".to_vec());
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final = client.client_final(server_first).expect("client final");
        assert_eq!(
            String::from_utf8(client_final).expect("utf-8"),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        client
            .verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .expect("the RFC's server signature is accepted");
        let wrong = client
            .verify_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap_err();
        assert!(wrong.contains("server signature does not match"), "{wrong}");
        let refused = client.verify_server_final(b"e=invalid-proof").unwrap_err();
        assert!(refused.contains("invalid-proof"), "{refused}");
    }

    #[test]
    fn scram_escapes_user_names_and_refuses_weak_or_foreign_server_messages() {
        let mut client = ScramClient::with_nonce(SaslMechanism::ScramSha512, "a,b=c", "pw", "abc");
        assert_eq!(client.client_first(), b"n,,n=a=2Cb=3Dc,r=abc".to_vec());
        let weak = client.client_final(b"r=abcdef,s=c2FsdA==,i=1000").unwrap_err();
        assert!(weak.contains("4096"), "{weak}");
        let foreign = client.client_final(b"r=xyzdef,s=c2FsdA==,i=4096").unwrap_err();
        assert!(foreign.contains("nonce"), "{foreign}");
        let no_salt = client.client_final(b"r=abcdef,i=4096").unwrap_err();
        assert!(no_salt.contains("salt"), "{no_salt}");
        assert!(client.client_final(b"r=abcdef,s=c2FsdA==,i=4096").is_ok());
    }
}
