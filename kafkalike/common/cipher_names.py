"""ssl.cipher.suites names: Java lists IANA names, OpenSSL has its own for TLS 1.2 suites.

The broker (pyOpenSSL) and the client (the standard library's ssl) both hand OpenSSL
the names made here; TLS 1.3 suites keep their IANA names in OpenSSL too.
"""
from __future__ import annotations

TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                          "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"})


def openssl_cipher_name(name: str) -> str:
    """Java's (IANA) TLS 1.2 suite name as OpenSSL spells it; OpenSSL names pass through.

    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, cipher = name[4:].split("_WITH_", 1)
    kx = {"RSA": ""}.get(kx, kx.replace("DHE_RSA", "DHE-RSA").replace("ECDHE_RSA", "ECDHE-RSA")
                         .replace("ECDHE_ECDSA", "ECDHE-ECDSA").replace("_", "-"))
    parts = cipher.split("_")
    out = []
    i = 0
    while i < len(parts):
        p = parts[i]
        if p == "AES" and i + 1 < len(parts):
            out.append("AES" + parts[i + 1])
            i += 2
            continue
        if p == "CHACHA20" and i + 1 < len(parts):
            out.append("CHACHA20-" + parts[i + 1])
            i += 3   # OpenSSL's name has no hash: ...-CHACHA20-POLY1305
            continue
        if p == "CBC":
            i += 1
            continue
        out.append(p)
        i += 1
    text = "-".join(out)
    return f"{kx}-{text}" if kx else text
