//! What a person must fix, from the Kerberos error code under a GSSAPI failure (MIT krb5's
//! `minor` status; their values are fixed by krb5's error table).

use std::path::Path;

const KDC_ERR_C_PRINCIPAL_UNKNOWN: i32 = -1765328378;
const KDC_ERR_S_PRINCIPAL_UNKNOWN: i32 = -1765328377;
const KDC_ERR_CLIENT_REVOKED: i32 = -1765328366;
const KDC_ERR_KEY_EXPIRED: i32 = -1765328361;
const KDC_ERR_PREAUTH_FAILED: i32 = -1765328360;
const AP_ERR_BAD_INTEGRITY: i32 = -1765328353;
const AP_ERR_TICKET_EXPIRED: i32 = -1765328352;
const AP_ERR_SKEW: i32 = -1765328347;
const CONFIG_CANTOPEN: i32 = -1765328249;
const CC_NOTFOUND: i32 = -1765328243;
const REALM_UNKNOWN: i32 = -1765328230;
const KDC_UNREACH: i32 = -1765328228;
const KT_NOTFOUND: i32 = -1765328203;
const FCC_NOFILE: i32 = -1765328189;
const REALM_CANT_RESOLVE: i32 = -1765328164;
const CONFIG_NODEFREALM: i32 = -1765328160;

const KRB5_CONF: &str = "krb5.conf (KRB5_CONFIG, else /etc/krb5.conf)";

/// Whose credentials, from where, for which service: what the advice names.
pub(super) struct Situation<'a> {
    /// The client principal, if configured.
    pub(super) principal: Option<&'a str>,
    /// The keytab, if credentials come from one (else from a ticket cache).
    pub(super) keytab: Option<&'a Path>,
    /// The broker's service principal asked for, `kafka/HOST`.
    pub(super) service: &'a str,
}

/// What to fix for Kerberos error `code`, in one sentence.
pub(super) fn advice(code: i32, situation: &Situation<'_>) -> String {
    let principal = situation
        .principal
        .unwrap_or("the ticket cache's principal");
    match (code, situation.keytab) {
        (KDC_ERR_PREAUTH_FAILED | AP_ERR_BAD_INTEGRITY, Some(keytab)) => format!(
            "the KDC refused the key of {principal} in keytab {}: the keytab is stale (the \
             principal's key changed after it was exported) or holds another key; export it \
             again (kadmin: ktadd -norandkey)",
            keytab.display()
        ),
        (KDC_ERR_PREAUTH_FAILED | AP_ERR_BAD_INTEGRITY, None) => {
            format!("the KDC refused the credentials of {principal}: run kinit again")
        }
        (KDC_ERR_C_PRINCIPAL_UNKNOWN, _) => format!(
            "the KDC does not know principal {principal}: check sasl.kerberos.principal and \
             its realm"
        ),
        (KDC_ERR_S_PRINCIPAL_UNKNOWN, _) => format!(
            "the KDC does not know the broker's service principal {}: check \
             sasl.kerberos.service.name (the broker's own) and that the broker address is the \
             host name in the broker's principal",
            situation.service
        ),
        (KDC_ERR_CLIENT_REVOKED, _) => {
            format!("the KDC has disabled or locked principal {principal}")
        }
        (KDC_ERR_KEY_EXPIRED, _) => {
            format!("the password of {principal} has expired: change it, then kinit again")
        }
        (AP_ERR_TICKET_EXPIRED, _) => {
            "the Kerberos ticket has expired: run kinit again, or use a keytab".to_owned()
        }
        (AP_ERR_SKEW, _) => "this host's clock and the KDC's differ too much".to_owned(),
        (KDC_UNREACH | REALM_CANT_RESOLVE, _) => format!(
            "no KDC of the realm answered: check that it is up and that {KRB5_CONF} names it \
             under [realms]"
        ),
        (REALM_UNKNOWN, _) => format!("{KRB5_CONF} names no KDC for the realm"),
        (CONFIG_CANTOPEN | CONFIG_NODEFREALM, _) => {
            format!("no usable {KRB5_CONF} with a default_realm")
        }
        (KT_NOTFOUND | FCC_NOFILE | CC_NOTFOUND, Some(keytab)) => format!(
            "keytab {} holds no key for {principal}: compare sasl.kerberos.principal with \
             `klist -k {}`",
            keytab.display(),
            keytab.display()
        ),
        (FCC_NOFILE | CC_NOTFOUND, None) => format!(
            "no Kerberos ticket for {principal}: run kinit (KRB5CCNAME names the ticket cache), \
             or set sasl.kerberos.keytab and sasl.kerberos.principal"
        ),
        _ => "Kerberos refused".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keytab() -> Situation<'static> {
        Situation {
            principal: Some("alice@EXAMPLE.COM"),
            keytab: Some(Path::new("/etc/alice.keytab")),
            service: "kafka/b1.example.com",
        }
    }

    fn cache() -> Situation<'static> {
        Situation {
            principal: None,
            keytab: None,
            service: "kafka/b1.example.com",
        }
    }

    #[test]
    fn each_failure_names_what_to_fix() {
        let cases: &[(i32, Situation<'_>, &[&str])] = &[
            (
                KDC_ERR_PREAUTH_FAILED,
                keytab(),
                &["/etc/alice.keytab", "stale", "alice@"],
            ),
            (KDC_ERR_PREAUTH_FAILED, cache(), &["kinit"]),
            (
                KDC_ERR_C_PRINCIPAL_UNKNOWN,
                keytab(),
                &["alice@EXAMPLE.COM", "sasl.kerberos.principal"],
            ),
            (
                KDC_ERR_S_PRINCIPAL_UNKNOWN,
                cache(),
                &["kafka/b1.example.com", "sasl.kerberos.service.name"],
            ),
            (KDC_UNREACH, cache(), &["KDC", "[realms]", "KRB5_CONFIG"]),
            (FCC_NOFILE, keytab(), &["klist -k /etc/alice.keytab"]),
            (CC_NOTFOUND, cache(), &["kinit", "sasl.kerberos.keytab"]),
            (AP_ERR_TICKET_EXPIRED, cache(), &["expired"]),
        ];
        for (code, situation, needles) in cases {
            let text = advice(*code, situation);
            for needle in *needles {
                assert!(text.contains(needle), "{code}: {text:?} lacks {needle:?}");
            }
        }
    }

    #[test]
    fn an_unknown_code_still_says_it_is_kerberos() {
        assert_eq!(advice(12345, &cache()), "Kerberos refused");
    }
}
