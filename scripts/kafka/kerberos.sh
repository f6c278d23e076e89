# shellcheck shell=bash
# `scripts/kafka.sh start --secured --kdc ENVFILE`: GSSAPI (Kerberos) on the secured
# instance, against the KDC of scripts/kdc.sh whose kdc.env is ENVFILE. Sourced by kafka.sh
# (it uses die); the contract is documented in kafka.sh's header.
#
# The broker logs in with its keytab at start-up, so the KDC must be serving before the broker
# starts; afterwards it only accepts tickets, which needs no KDC.

# Listeners that offer GSSAPI besides the other SASL mechanisms.
KERBEROS_LISTENERS=(SASL_SSL SASL_PLAINTEXT)

# kdc_env_value FILE KEY: one value of a kdc.env.
kdc_env_value() {
    local value
    value="$(sed -n "s/^$2=//p" "$1")"
    [[ -n "$value" ]] || die "$1 has no $2 (is it a kdc.env of scripts/kdc.sh?)"
    echo "$value"
}

# check_kdc_env FILE: fails early, before any broker work, on a missing or partial file.
check_kdc_env() {
    local file="$1" key
    [[ -f "$file" ]] || die "--kdc $file: no such file (scripts/kdc.sh start prints the path of kdc.env)"
    for key in KRB5_CONFIG SERVICE_NAME BROKER_PRINCIPAL BROKER_KEYTAB; do
        kdc_env_value "$file" "$key" >/dev/null
    done
}

# kerberos_mechanisms LISTENER MECHANISMS KDC_ENV: MECHANISMS, plus GSSAPI on the Kerberos
# listeners when the instance has a KDC.
kerberos_mechanisms() {
    local listener="$1" mechanisms="$2" kdc_env="$3" l
    if [[ -n "$kdc_env" ]]; then
        for l in "${KERBEROS_LISTENERS[@]}"; do
            [[ "$l" == "$listener" ]] && { echo "$mechanisms,GSSAPI"; return; }
        done
    fi
    echo "$mechanisms"
}

# kerberos_properties KDC_ENV: server.properties lines for GSSAPI on the Kerberos listeners
# (their sasl.enabled.mechanisms come from kerberos_mechanisms).
kerberos_properties() {
    local kdc_env="$1" keytab principal l
    keytab="$(kdc_env_value "$kdc_env" BROKER_KEYTAB)"
    principal="$(kdc_env_value "$kdc_env" BROKER_PRINCIPAL)"
    echo
    echo "# GSSAPI against the KDC of $kdc_env"
    echo "sasl.kerberos.service.name=$(kdc_env_value "$kdc_env" SERVICE_NAME)"
    for l in "${KERBEROS_LISTENERS[@]}"; do
        echo "listener.name.${l,,}.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab=\"$keytab\" principal=\"$principal\";"
    done
}

# kerberos_jvm_options INSTANCE_DIR: the broker JVM's options for the instance's KDC, if any
# (the KDC's krb5.conf instead of /etc/krb5.conf).
kerberos_jvm_options() {
    local f="$1/kdc-env"
    [[ -f "$f" ]] || return 0
    echo "-Djava.security.krb5.conf=$(kdc_env_value "$(cat "$f")" KRB5_CONFIG)"
}
