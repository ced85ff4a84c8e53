//! The default Ethernet address of each end of a link: what the DPDK
//! driver gives a port without `mac=`, and what the `vecring` tool sends
//! from and to, so that its frames reach such a port.

/// The default MAC of one end of a link: a locally administered unicast
/// address from a stable hash (FNV-1a, fixed by this code rather than by
/// the standard library's unspecified hasher) of domain, link and role.
/// The lowest bit of the last byte is the role, so the two ends always
/// differ.
pub fn default_mac(domain: &str, link: &str, master: bool) -> [u8; 6] {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let role: &[u8] = if master { b"master" } else { b"slave" };
    let mut h = FNV_OFFSET;
    for part in [domain.as_bytes(), b"\0", link.as_bytes(), b"\0", role] {
        for &b in part {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
    }
    let b = h.to_be_bytes();
    let mut mac = [b[0], b[1], b[2], b[3], b[4], b[5]];
    mac[0] = (mac[0] & 0xfc) | 0x02; // unicast, locally administered
    mac[5] = (mac[5] & 0xfe) | u8::from(master);
    mac
}
