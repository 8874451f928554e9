//! Signed-JWT validation with tokens signed here: an RSA key (a fixed test key: ring cannot
//! generate RSA keys) and EC keys made per test; every refusal Kafka's validator makes and the
//! tokens it accepts.
use std::io::Write;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64URL};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};

use super::jwt::JwtValidator;
use super::oauthbearer::{self, OAuthBearerServer, Validator};
use crate::config::oauth::{JwksEndpoint, OAuthValidation};

/// A 2048-bit RSA test key (PKCS#1 DER), made with `openssl genpkey` for these tests only.
const RSA_PKCS1_DER: &str = "MIIEpQIBAAKCAQEA0OI1SWbpwzooWIWV8y5h6mJZVBnnomi6xyv32sTOHMSxr5X39gmGp9zZkLwgAycawr8NpbVaALS0pQ9YD90v/Yjcz7tDWA8Zd1dmSV+cF5mKgUEswsRlks/Zyg5Xo4Ymq3Cau2T+6Gh2Aa7/H6D49hWGy5m6I+3WuPFernBTknIdY2RRfB1tavTwhoz/yVMTAlhKqxq3XOQGIyk47bPcq8dnDFYDNuwNlo2KXaWOrNyWdq1LT6mJO1EKlCXmZ7en4Ce0DfK47Jh/GqFiUrHUWEGjoT02o6HyenW+SM3VS8pjbLyx7aRGrUArodXLQISXjeJpL5QbT26Q77V4gktVUwIDAQABAoIBAFE7BtnqqZGANlxmZq/RI8bQREjOYiPocmouEQ8EZdsOKsNLoMgPYEw7OGhuoExZkrCVN6tvYPbRT0a5NtfEfnssFCK8gi3mgVLFrENwaPVMgm5NeCit04pKRjmrZi1zZ+pXufSSDAc5SFrTQOd95BNev7LBr391aIE3bEiN6hISlrgmnZDHPM1Ch7JKGMhZDX+fnWIZndut3FEa2zfW38S8VfxD1SIx9yRHV50Am5SwC4nwlajmXuimYr8CyliTdN+TdgYx6HU20ycj4m/wZUWKYv/1XTNrmu57tmseV70QrHqX7XPqLluL3Tki0LrirODStVB0Tqk5AjQBObE+NFECgYEA6k0cxS7qiJf63DMrpaMJuyHOzO8gKMYD3KfwtRzcQl3xFMFLonHLkWE5g+aE8145KHjBoojUhQlyaVfg/ttHdjVlhkWTKe+d7AL4shxNU/DLXquL7mO2S/7qwHwpA6UXk8OHWLe4VeuivAgDktFofuBaw7ariiPn3yDEytSvOtcCgYEA5Dp8xJQGs4UEMeOf64hTIN2IVgANR+Gr6M28iiMRQ3Dus+v/xt1IkgC/zmmLb8KjgfslnxQi0yVr2D8WGj2b9FLS1kbG30EhJIU3aHmLFM4+PAQ2qiNDzKGvtLShGAKp9NBRiJVKPNZ8V0Mx7ZBIjocVMgGpRikjieusf3KWheUCgYEAlFzt+eKCeqoaHLN+UO1TbR60T8qfx5HTwjbJ0jWLN686yFS56ww5xj4VaHNg/qZMdVc57gzM3c0kmJYgD+GUd8LKHeMSk/x6OIeNKWOIh72zWagw/GxBdA/gYLB+XCN/MX8fxkrXu/hw3LYKZT6a97RjZQjXyKqB2iVq17EjoJMCgYEAv6jONlcI+aDu0OaS2bz18leXsoEApijBsRN1DZw9VyFzk+zQMzSJSPMQIEtKKWSO4w0BnwHN7Ps0AbmY2hh660bSf9eYEswjBQRKb5YCUkqQwN3Y+i/7M9FkOKCn1/4Es+5tSgH1AfotGSr4tsO/6tFN31y9xomtqpkblzunZHECgYEAxyLaQZdq0yzt/IH5aMnjtVlOQ69TH4SOUmNWGDqhrwTAlCz2tRMgEmykEZDyb8VQ0sGt56uVxQvke4AefTw38Oe8b3khDxdUZ2wYOBE0+pvKpY7V4P71sAvpjxlj+00q9ZvrMouSPzVzU/3EsBVOjw9blpiX8a4js9V8X2RY0aA=";

pub(super) const NOW_MS: i64 = 1_700_000_000_000;
const NOW_S: i64 = NOW_MS / 1000;

pub(super) enum Key {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair, &'static str),
    P521(p521::ecdsa::SigningKey),
}

/// A signing key and its kid.
pub(super) struct Signer {
    pub kid: String,
    key: Key,
}

impl Signer {
    pub fn rsa(kid: &str) -> Signer {
        let der = STANDARD.decode(RSA_PKCS1_DER).unwrap();
        Signer {
            kid: kid.into(),
            key: Key::Rsa(RsaKeyPair::from_der(&der).unwrap()),
        }
    }

    pub fn ec(kid: &str, crv: &'static str) -> Signer {
        let alg = match crv {
            "P-256" => &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            _ => &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
        };
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        Signer {
            kid: kid.into(),
            key: Key::Ec(
                EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).unwrap(),
                crv,
            ),
        }
    }

    /// A P-521 key for ES512 (ring cannot make or use one; RustCrypto's `p521` does).
    pub fn p521(kid: &str) -> Signer {
        use ring::rand::SecureRandom;
        let mut scalar = [0u8; 66];
        SystemRandom::new().fill(&mut scalar[1..]).unwrap();
        Signer {
            kid: kid.into(),
            key: Key::P521(p521::ecdsa::SigningKey::from_slice(&scalar).unwrap()),
        }
    }

    /// The key's JWK (public part).
    pub fn jwk(&self) -> serde_json::Value {
        match &self.key {
            Key::P521(k) => {
                let point = p521::ecdsa::VerifyingKey::from(k).to_sec1_point(false);
                let point = point.as_bytes();
                serde_json::json!({
                    "kty": "EC", "crv": "P-521", "kid": self.kid,
                    "x": B64URL.encode(&point[1..67]),
                    "y": B64URL.encode(&point[67..]),
                })
            }
            Key::Rsa(k) => {
                let c = signature::RsaPublicKeyComponents::<Vec<u8>>::from(k.public());
                serde_json::json!({
                    "kty": "RSA", "use": "sig", "kid": self.kid,
                    "n": B64URL.encode(&c.n), "e": B64URL.encode(&c.e),
                })
            }
            Key::Ec(k, crv) => {
                let point = k.public_key().as_ref();
                let len = (point.len() - 1) / 2;
                serde_json::json!({
                    "kty": "EC", "crv": crv, "kid": self.kid,
                    "x": B64URL.encode(&point[1..1 + len]),
                    "y": B64URL.encode(&point[1 + len..]),
                })
            }
        }
    }

    /// A compact JWS of `claims` signed with `alg`, naming `kid` in its header.
    pub fn sign_as(&self, alg: &str, kid: &str, claims: &serde_json::Value) -> String {
        let header = serde_json::json!({"alg": alg, "typ": "JWT", "kid": kid});
        let input = format!(
            "{}.{}",
            B64URL.encode(header.to_string()),
            B64URL.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let sig = match &self.key {
            Key::Rsa(k) => {
                let enc: &'static dyn signature::RsaEncoding = match alg {
                    "RS256" => &signature::RSA_PKCS1_SHA256,
                    "RS384" => &signature::RSA_PKCS1_SHA384,
                    "RS512" => &signature::RSA_PKCS1_SHA512,
                    "PS256" => &signature::RSA_PSS_SHA256,
                    _ => panic!("no RSA alg {alg}"),
                };
                let mut sig = vec![0u8; k.public().modulus_len()];
                k.sign(enc, &rng, input.as_bytes(), &mut sig).unwrap();
                sig
            }
            Key::Ec(k, _) => k.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            Key::P521(k) => {
                use p521::ecdsa::signature::Signer as _;
                let sig: p521::ecdsa::Signature = k.sign(input.as_bytes());
                sig.to_bytes().to_vec()
            }
        };
        format!("{input}.{}", B64URL.encode(sig))
    }

    pub fn sign(&self, alg: &str, claims: &serde_json::Value) -> String {
        self.sign_as(alg, &self.kid, claims)
    }
}

/// Writes a JWKS of `signers` to `path`.
pub(super) fn write_jwks(path: &std::path::Path, signers: &[&Signer]) {
    let keys: Vec<_> = signers.iter().map(|s| s.jwk()).collect();
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(serde_json::json!({ "keys": keys }).to_string().as_bytes())
        .unwrap();
}

pub(super) fn settings(path: &std::path::Path) -> OAuthValidation {
    OAuthValidation {
        jwks_endpoint: JwksEndpoint::File(path.to_path_buf()),
        jwks_refresh_ms: 3_600_000,
        jwks_retry_backoff_ms: 100,
        jwks_retry_backoff_max_ms: 10_000,
        expected_audience: vec!["kafka".into()],
        expected_issuer: Some("https://idp.example".into()),
        clock_skew_seconds: 30,
        scope_claim_name: "scope".into(),
        sub_claim_name: "sub".into(),
        jwks_ssl: Default::default(),
    }
}

/// Claims a validator with `settings` accepts.
pub(super) fn good_claims() -> serde_json::Value {
    serde_json::json!({
        "sub": "svc-orders", "iss": "https://idp.example", "aud": ["kafka", "other"],
        "iat": NOW_S - 10, "exp": NOW_S + 3600, "scope": "kafka.write"
    })
}

fn with(mut claims: serde_json::Value, key: &str, v: serde_json::Value) -> serde_json::Value {
    if v.is_null() {
        claims.as_object_mut().unwrap().remove(key);
    } else {
        claims[key] = v;
    }
    claims
}

#[test]
fn signed_tokens_of_every_algorithm_are_accepted_with_their_subject_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let rsa = Signer::rsa("rsa-1");
    let p256 = Signer::ec("ec-256", "P-256");
    let p384 = Signer::ec("ec-384", "P-384");
    let p521 = Signer::p521("ec-521");
    write_jwks(&path, &[&rsa, &p256, &p384, &p521]);
    let v = JwtValidator::new(&settings(&path)).unwrap();
    for (signer, alg) in [
        (&rsa, "RS256"),
        (&rsa, "RS384"),
        (&rsa, "RS512"),
        (&rsa, "PS256"),
        (&p256, "ES256"),
        (&p384, "ES384"),
        (&p521, "ES512"),
    ] {
        let t = v.validate(&signer.sign(alg, &good_claims()), NOW_MS);
        let t = t.unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(t.principal, "svc-orders", "{alg}");
        assert_eq!(t.expires_at_ms, (NOW_S + 3600) * 1000, "{alg}");
    }
    // Inside the 30 s of clock skew: still valid; a custom subject claim names the principal.
    let late = with(good_claims(), "exp", (NOW_S - 20).into());
    assert!(v.validate(&rsa.sign("RS256", &late), NOW_MS).is_ok());
    let custom = OAuthValidation {
        sub_claim_name: "client_id".into(),
        ..settings(&path)
    };
    let v2 = JwtValidator::new(&custom).unwrap();
    let claims = with(good_claims(), "client_id", "orders-app".into());
    assert_eq!(
        v2.validate(&rsa.sign("RS256", &claims), NOW_MS)
            .unwrap()
            .principal,
        "orders-app"
    );
}

#[test]
fn expired_unsigned_wrong_key_audience_and_issuer_tokens_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let rsa = Signer::rsa("rsa-1");
    let ec = Signer::ec("ec-1", "P-256");
    let rogue = Signer::ec("ec-1", "P-256");
    write_jwks(&path, &[&rsa, &ec]);
    let v = JwtValidator::new(&settings(&path)).unwrap();
    let unsigned = oauthbearer::unsecured_token(&good_claims().to_string());
    let tampered = {
        let t = rsa.sign("RS256", &good_claims());
        let parts: Vec<&str> = t.split('.').collect();
        let other = with(good_claims(), "sub", "admin".into());
        format!(
            "{}.{}.{}",
            parts[0],
            B64URL.encode(other.to_string()),
            parts[2]
        )
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired past the skew",
            rsa.sign("RS256", &with(good_claims(), "exp", (NOW_S - 31).into())),
            "no longer valid",
        ),
        ("unsigned (alg none)", unsigned, "not a permitted algorithm"),
        (
            "signed by another key under a known kid",
            rogue.sign("ES256", &good_claims()),
            "signature is invalid",
        ),
        (
            "payload changed after signing",
            tampered,
            "signature is invalid",
        ),
        (
            "an unknown kid",
            rsa.sign_as("RS256", "rsa-2", &good_claims()),
            "Unable to find a suitable verification key",
        ),
        (
            "an RSA alg naming an EC key",
            rsa.sign_as("RS256", "ec-1", &good_claims()),
            "Unable to find a suitable verification key",
        ),
        (
            "the wrong audience",
            rsa.sign("RS256", &with(good_claims(), "aud", "billing".into())),
            "doesn't contain an acceptable identifier",
        ),
        (
            "the wrong issuer",
            rsa.sign("RS256", &with(good_claims(), "iss", "https://evil".into())),
            "Issuer (iss) claim value (https://evil)",
        ),
        (
            "no issuer",
            rsa.sign(
                "RS256",
                &with(good_claims(), "iss", serde_json::Value::Null),
            ),
            "No Issuer (iss) claim",
        ),
        (
            "no iat",
            rsa.sign(
                "RS256",
                &with(good_claims(), "iat", serde_json::Value::Null),
            ),
            "No Issued At (iat)",
        ),
        (
            "no exp",
            rsa.sign(
                "RS256",
                &with(good_claims(), "exp", serde_json::Value::Null),
            ),
            "No Expiration Time (exp)",
        ),
        (
            "not valid before a later time",
            rsa.sign("RS256", &with(good_claims(), "nbf", (NOW_S + 60).into())),
            "not yet valid",
        ),
        (
            "no subject",
            rsa.sign(
                "RS256",
                &with(good_claims(), "sub", serde_json::Value::Null),
            ),
            "sub value must be non-null",
        ),
        (
            "a blank scope",
            rsa.sign("RS256", &with(good_claims(), "scope", " ".into())),
            "scope value must be non-empty",
        ),
        ("not a JWS", "abc.def".to_string(), "3 dot-separated parts"),
    ];
    for (what, token, reason) in cases {
        let err = v.validate(&token, NOW_MS).expect_err(what);
        assert!(err.contains(reason), "{what}: {err}");
    }
    // jose4j's default audience check: a token with aud, no audience configured.
    let no_aud = OAuthValidation {
        expected_audience: vec![],
        ..settings(&path)
    };
    let err = JwtValidator::new(&no_aud)
        .unwrap()
        .validate(&rsa.sign("RS256", &good_claims()), NOW_MS)
        .unwrap_err();
    assert!(err.contains("no expected audience"), "{err}");
}

#[test]
fn a_refused_signed_token_reads_kafkas_invalid_token_status() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let rsa = Signer::rsa("rsa-1");
    write_jwks(&path, &[&rsa]);
    let v = Validator::Jwt(JwtValidator::new(&settings(&path)).unwrap());
    let expired = rsa.sign("RS256", &with(good_claims(), "exp", (NOW_S - 60).into()));
    let msg = format!("n,,\u{1}auth=Bearer {expired}\u{1}\u{1}");
    let mut server = OAuthBearerServer::default();
    let (mut user, mut reason) = (None, None);
    match server.step(msg.as_bytes(), &v, NOW_MS, &mut user, &mut reason) {
        Ok(oauthbearer::Step::Challenge(c)) => {
            assert_eq!(c, br#"{"status":"invalid_token"}"#.to_vec())
        }
        _ => panic!("expected the error challenge"),
    }
    let err = match server.step(&[1], &v, NOW_MS, &mut user, &mut reason) {
        Err(e) => e,
        Ok(_) => panic!("the exchange went on"),
    };
    assert_eq!(err.to_string(), r#"{"status":"invalid_token"}"#);
    // The reason reaches the one log line of the failure.
    assert!(reason.unwrap().contains("no longer valid"));
}

#[test]
fn a_changed_jwks_file_is_read_again_and_a_broken_one_keeps_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let old = Signer::rsa("old");
    let new = Signer::ec("new", "P-256");
    write_jwks(&path, &[&old]);
    let v = JwtValidator::new(&settings(&path)).unwrap();
    let by_old = old.sign("RS256", &good_claims());
    let by_new = new.sign("ES256", &good_claims());
    assert!(v.validate(&by_old, NOW_MS).is_ok());
    assert!(v.validate(&by_new, NOW_MS).is_err());
    // A rotation: the file now holds only the new key.
    write_jwks(&path, &[&new]);
    let bump = |secs: u64| {
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap();
    };
    bump(1_000);
    assert!(v.validate(&by_new, NOW_MS).is_ok());
    assert!(v.validate(&by_old, NOW_MS).is_err());
    // A half-written file is not taken: the new key still works.
    std::fs::write(&path, b"{\"keys\": [").unwrap();
    bump(2_000);
    assert!(v.validate(&by_new, NOW_MS).is_ok());
    // A missing file at start-up stops the listener from starting.
    let missing = settings(&dir.path().join("absent.json"));
    assert!(JwtValidator::new(&missing).is_err());
}

#[test]
fn jwks_documents_parse_rsa_and_ec_keys_and_skip_others() {
    let rsa = Signer::rsa("r");
    let ec = Signer::ec("e", "P-384");
    let p521 = Signer::p521("p");
    let doc = serde_json::json!({"keys": [
        rsa.jwk(), ec.jwk(),
        {"kty": "oct", "k": "c2VjcmV0"},
        p521.jwk(),
    ]});
    let keys = super::jwks::parse_jwks(doc.to_string().as_bytes()).unwrap();
    assert_eq!(keys.len(), 3);
    assert!(
        matches!(&keys[2].key, super::jwks::PublicKey::Ec { crv, point } if crv == "P-521" && point.len() == 133)
    );
    assert_eq!(keys[0].kid.as_deref(), Some("r"));
    assert_eq!(keys[0].usage.as_deref(), Some("sig"));
    assert!(
        matches!(&keys[1].key, super::jwks::PublicKey::Ec { crv, point } if crv == "P-384" && point.len() == 97)
    );
    for bad in [
        "not json",
        "{}",
        r#"{"keys":[{"kty":"RSA","n":"AQ"}]}"#,
        r#"{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#,
        r#"{"keys":[{"n":"AQ"}]}"#,
    ] {
        assert!(super::jwks::parse_jwks(bad.as_bytes()).is_err(), "{bad}");
    }
}

/// An ES512 token and its key made by another implementation: Python's `cryptography` 48
/// (OpenSSL), P-521 private scalar 0x1234567890abcdef repeated five times, SHA-512, the
/// signature's `r || s` as JWS writes it; claims as `good_claims()`.
const PY_ES512_JWK: &str = r#"{"kty": "EC", "crv": "P-521", "kid": "py-521", "use": "sig", "x": "AFujRgi_LzzdIR5q39xYDEMYuAHQ4CiBE3TIrmFtEL7qBQQuL8ECVK0BSLpypVcxgoULrqxr0MmV01MQwe2b_Zq6", "y": "AI5-7ORDLqJB9WSOL8CfXDn9q00Iy36d1nBb9ujV5oVH3OaqYabWOlpaS71CXmxouJT4wHxZvMq2IU8qalOS8wwx"}"#;
const PY_ES512_TOKEN: &str = "eyJhbGciOiJFUzUxMiIsInR5cCI6IkpXVCIsImtpZCI6InB5LTUyMSJ9.eyJzdWIiOiJzdmMtb3JkZXJzIiwiaXNzIjoiaHR0cHM6Ly9pZHAuZXhhbXBsZSIsImF1ZCI6WyJrYWZrYSIsIm90aGVyIl0sImlhdCI6MTY5OTk5OTk5MCwiZXhwIjoxNzAwMDAzNjAwLCJzY29wZSI6ImthZmthLndyaXRlIn0.AawZvLnyZn-iDeDAvTv9y6UmO9jHFwEuDoXr-QATld5p-4ZyHgVZSh1_f3Io2uIRGKM6bXQIIl4k5qZngVS1VgQiAPyQ3J1m_g5wRK8K2Ruduf1rWN2BD07C43W9NfkU462lSdY3k6agi5a0Qmm_fq2-WPpfr2aaZCviTX05caSlG_AH";

#[test]
fn es512_tokens_of_another_implementation_verify_and_tampering_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let p256 = Signer::ec("ec-256", "P-256");
    let py: serde_json::Value = serde_json::from_str(PY_ES512_JWK).unwrap();
    let doc = serde_json::json!({ "keys": [p256.jwk(), py] });
    std::fs::write(&path, doc.to_string()).unwrap();
    let v = JwtValidator::new(&settings(&path)).unwrap();
    let t = v.validate(PY_ES512_TOKEN, NOW_MS).unwrap();
    assert_eq!(t.principal, "svc-orders");
    assert_eq!(t.expires_at_ms, (NOW_S + 3600) * 1000);

    // One bit of the signature flipped.
    let mut sig = B64URL
        .decode(PY_ES512_TOKEN.rsplit('.').next().unwrap())
        .unwrap();
    sig[70] ^= 1;
    let head = &PY_ES512_TOKEN[..PY_ES512_TOKEN.rfind('.').unwrap()];
    let tampered = format!("{head}.{}", B64URL.encode(&sig));
    let why = v.validate(&tampered, NOW_MS).unwrap_err();
    assert!(why.contains("signature is invalid"), "{why}");
    // A truncated signature is not a P-521 signature at all.
    let short = format!("{head}.{}", B64URL.encode(&sig[..64]));
    assert!(v.validate(&short, NOW_MS).is_err());
    // ES512 never verifies with a key of another curve, even one the token names.
    let wrong_curve = p256.sign_as("ES512", "ec-256", &good_claims());
    let why = v.validate(&wrong_curve, NOW_MS).unwrap_err();
    assert!(
        why.contains("Unable to find a suitable verification key"),
        "{why}"
    );
}
