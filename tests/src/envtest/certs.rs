//! The real server's key material, fresh for every start: a CA, a serving certificate for
//! `127.0.0.1` and `localhost` signed by it, and the service-account signing key pair
//! (ECDSA P-256, which kube-apiserver accepts as readily as RSA and rcgen makes with ring).

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// PEM texts, ready to write to the files kube-apiserver reads.
pub struct ServerCerts {
    pub ca_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    pub service_account_key_pem: String,
    pub service_account_pub_pem: String,
}

impl ServerCerts {
    pub fn generate() -> Result<ServerCerts, rcgen::Error> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "promotion-envtest-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut serving = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])?;
        serving
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving_key = KeyPair::generate()?;
        let serving_cert = serving.signed_by(&serving_key, &issuer)?;

        let service_account = KeyPair::generate()?;
        Ok(ServerCerts {
            ca_pem: ca_cert.pem(),
            serving_cert_pem: serving_cert.pem(),
            serving_key_pem: serving_key.serialize_pem(),
            service_account_key_pem: service_account.serialize_pem(),
            service_account_pub_pem: service_account.public_key_pem(),
        })
    }
}
