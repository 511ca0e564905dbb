//! DPoP (RFC 9449): sender-constrained tokens. The client holds a P-256 key; the token
//! request carries a proof of it (so the token is bound to the key), and so does every request
//! that presents the token (`Authorization: DPoP …` plus a fresh `DPoP` proof naming the
//! method, the URL and the token's hash). Servers may require a nonce: a `use_dpop_nonce`
//! answer carries one in `DPoP-Nonce`, and the request is sent again with it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use sha2::Digest as _;

use super::token::random_string;
use crate::AuthError;

/// A DPoP key.
#[derive(Clone)]
pub(crate) struct DpopKey {
    /// PKCS#8 DER, kept so that a stored grant keeps its key.
    pkcs8: Vec<u8>,
    key: EncodingKey,
    jwk: jsonwebtoken::jwk::Jwk,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey(..)")
    }
}

impl DpopKey {
    /// A new P-256 key.
    pub(crate) fn generate() -> Result<Self, AuthError> {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let doc = EcdsaKeyPair::generate_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &aws_lc_rs::rand::SystemRandom::new(),
        )
        .map_err(|_| AuthError::Config("cannot generate a DPoP key".into()))?;
        Self::from_pkcs8(doc.as_ref().to_vec())
    }

    /// The key in a PKCS#8 document.
    pub(crate) fn from_pkcs8(pkcs8: Vec<u8>) -> Result<Self, AuthError> {
        let key = EncodingKey::from_ec_der(&pkcs8);
        let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256)
            .map_err(|e| AuthError::Config(format!("DPoP key: {e}")))?;
        jwk.common = jsonwebtoken::jwk::CommonParameters::default();
        Ok(Self { pkcs8, key, jwk })
    }

    /// The key, base64url, for the token store.
    pub(crate) fn export(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// The key from the token store.
    pub(crate) fn import(text: &str) -> Result<Self, AuthError> {
        let der = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|e| AuthError::Store(format!("DPoP key: {e}")))?;
        Self::from_pkcs8(der)
    }

    /// A proof for a `method` request to `url` (query and fragment left out), presenting
    /// `token` if given, with the server's `nonce` if it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut claims = serde_json::json!({
            "jti": random_string(),
            "htm": method,
            "htu": htu,
            "iat": super::store::now(),
        });
        if let Some(t) = token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(t.as_bytes()))
                .into();
        }
        if let Some(n) = nonce {
            claims["nonce"] = n.into();
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| AuthError::Config(format!("signing a DPoP proof: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_carry_the_public_key_and_verify_with_it() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://a.example/mcp?x=1", Some("tok"), Some("n1"))
            .unwrap();
        let header = jsonwebtoken::decode_header(&proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.unwrap();
        let text = serde_json::to_string(&jwk).unwrap();
        assert!(!text.contains("\"d\""), "no private part: {text}");
        let dk = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_aud = false;
        let c = jsonwebtoken::decode::<serde_json::Value>(&proof, &dk, &v)
            .unwrap()
            .claims;
        assert_eq!(c["htu"], "https://a.example/mcp");
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["nonce"], "n1");
        assert!(c["ath"].is_string());
        let again = DpopKey::import(&key.export()).unwrap();
        assert_eq!(serde_json::to_string(&again.jwk).unwrap(), text);
    }
}
