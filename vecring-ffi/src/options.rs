//! `vecring_options_t`: everything [`vecring_core::LinkBuilder`] can set,
//! as a C struct that can grow (its first field is its size).

use crate::error::Error;
use std::ffi::{c_char, c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;
use vecring_core::{Geometry, HugepagePolicy, LinkBuilder, LinkState, Role};

/// `vecring_options_t.role`: this process is the slave (connects).
pub const VECRING_ROLE_SLAVE: i32 = 0;
/// `vecring_options_t.role`: this process is the master (creates the memory
/// and listens).
pub const VECRING_ROLE_MASTER: i32 = 1;

/// `vecring_options_t.hugepages`: use hugepages, fall back to small pages.
pub const VECRING_HUGEPAGES_PREFER: i32 = 0;
/// `vecring_options_t.hugepages`: use hugepages or fail.
pub const VECRING_HUGEPAGES_REQUIRE: i32 = 1;
/// `vecring_options_t.hugepages`: use small pages.
pub const VECRING_HUGEPAGES_NEVER: i32 = 2;

/// Called from the link's control thread on every state change, with
/// `up` 1 or 0 and the generation that came up (0 when down).
pub type vecring_state_cb_t =
    Option<unsafe extern "C" fn(user_data: *mut c_void, up: c_int, generation: u64)>;

/// Options of [`crate::vecring_open`]; see `include/vecring.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vecring_options_t {
    /// `sizeof(vecring_options_t)` of the caller's header.
    pub size: u32,
    /// `VECRING_ROLE_SLAVE` or `VECRING_ROLE_MASTER`.
    pub role: i32,
    /// Domain name (required).
    pub domain: *const c_char,
    /// Link name (required).
    pub link: *const c_char,
    /// Parent of the domain directories; NULL for `/run/vecring`.
    pub run_dir: *const c_char,
    /// NUMA node of the link memory; -1 for none.
    pub numa_node: i32,
    /// One of `VECRING_HUGEPAGES_*`.
    pub hugepages: i32,
    /// Ring slot count; 0 for the default.
    pub slot_count: u32,
    /// Ring slot size in bytes; 0 for the default.
    pub slot_size: u32,
    /// Largest frame; 0 for 9216.
    pub max_frame_len: u32,
    /// Socket mode bits; 0 for 0660.
    pub socket_mode: u32,
    /// Owner uid of the socket (the only uid admitted unless
    /// `allowed_uids` says otherwise); -1 for none.
    pub owner_uid: i64,
    /// Owner gid; -1 for none.
    pub owner_gid: i64,
    /// Slave uids the master accepts; NULL/0 for any.
    pub allowed_uids: *const u32,
    /// Entries of `allowed_uids`.
    pub allowed_uid_count: u32,
    /// How often a waiting slave retries, in ms; 0 for 50.
    pub retry_interval_ms: u32,
    /// State-change callback, or NULL.
    pub on_state_change: vecring_state_cb_t,
    /// Passed to `on_state_change`.
    pub user_data: *mut c_void,
    /// Uids the master may run as (slave); NULL/0 for the default rule.
    pub master_uids: *const u32,
    /// Entries of `master_uids`.
    pub master_uid_count: u32,
    /// The network namespace to meet in (a namespace file, or `"self"`),
    /// or NULL for the run directory; see `LinkBuilder::netns`.
    pub netns: *const c_char,
}

/// Size of the first published layout (up to `user_data`): callers
/// compiled against it (or a later one) are accepted, and get the defaults
/// for the fields added since.
pub const OPTIONS_SIZE_V1: u32 = std::mem::offset_of!(vecring_options_t, master_uids) as u32;

/// Size of the second layout (up to `master_uid_count`, with the padding
/// that followed it): callers built against it get no `netns`.
pub const OPTIONS_SIZE_V2: u32 = std::mem::offset_of!(vecring_options_t, netns) as u32;

impl vecring_options_t {
    /// The defaults [`vecring_options_init`] writes.
    pub const DEFAULT: vecring_options_t = vecring_options_t {
        size: std::mem::size_of::<vecring_options_t>() as u32,
        role: VECRING_ROLE_SLAVE,
        domain: std::ptr::null(),
        link: std::ptr::null(),
        run_dir: std::ptr::null(),
        numa_node: -1,
        hugepages: VECRING_HUGEPAGES_PREFER,
        slot_count: 0,
        slot_size: 0,
        max_frame_len: 0,
        socket_mode: 0,
        owner_uid: -1,
        owner_gid: -1,
        allowed_uids: std::ptr::null(),
        allowed_uid_count: 0,
        retry_interval_ms: 0,
        on_state_change: None,
        user_data: std::ptr::null_mut(),
        master_uids: std::ptr::null(),
        master_uid_count: 0,
        netns: std::ptr::null(),
    };
}

/// Fills the first `size` bytes of `*opts` (at most the struct) with the
/// defaults and sets `size` to what was filled, so that a program built
/// against an older, shorter header is never written past its struct.
/// Does nothing if `opts` is null or `size` is below [`OPTIONS_SIZE_V1`].
///
/// # Safety
/// `opts` must be null or point to at least `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn vecring_options_init_size(opts: *mut vecring_options_t, size: usize) {
    let n = size.min(std::mem::size_of::<vecring_options_t>());
    if opts.is_null() || n < OPTIONS_SIZE_V1 as usize {
        return;
    }
    let mut d = vecring_options_t::DEFAULT;
    d.size = n as u32;
    // SAFETY: the caller guarantees `n <= size` writable bytes at `opts`;
    // `d` is a whole struct, so its first `n` bytes are readable; the
    // regions are distinct.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&d as *const vecring_options_t).cast::<u8>(),
            opts.cast::<u8>(),
            n,
        )
    };
}

/// The first layout's initializer (the header's `vecring_options_init` is
/// now a macro passing `sizeof`): programs built against that layout call
/// this symbol, and get exactly that layout filled ([`OPTIONS_SIZE_V2`]
/// bytes, up to `master_uid_count`).
///
/// # Safety
/// `opts` must be null or point to writable memory for that layout.
#[no_mangle]
pub unsafe extern "C" fn vecring_options_init(opts: *mut vecring_options_t) {
    // SAFETY: forwarded; the first layout is OPTIONS_SIZE_V2 bytes.
    unsafe { vecring_options_init_size(opts, OPTIONS_SIZE_V2 as usize) }
}

/// The user's callback and its argument, moved to the control thread.
struct Callback {
    f: unsafe extern "C" fn(*mut c_void, c_int, u64),
    user_data: *mut c_void,
}

// SAFETY: the header requires the callback to be callable from the link's
// control thread with `user_data`; we only pass the pointer through.
unsafe impl Send for Callback {}
// SAFETY: as above; the control thread is the only caller.
unsafe impl Sync for Callback {}

impl Callback {
    fn call(&self, state: LinkState) {
        let (up, generation) = match state {
            LinkState::Up { generation } => (1, generation),
            LinkState::Down => (0, 0),
        };
        // SAFETY: the caller of `vecring_open` supplied a function of this
        // signature that accepts `user_data` from any thread.
        unsafe { (self.f)(self.user_data, up, generation) }
    }
}

/// A required, UTF-8 C string option.
///
/// # Safety
/// `p` must be null or a NUL-terminated string.
unsafe fn name<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    if p.is_null() {
        return Err(Error::inval(format!("options.{what} is NULL")));
    }
    // SAFETY: non-null, and the caller guarantees NUL termination.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| {
        Error::new(
            crate::error::VECRING_E_NAME,
            format!("options.{what} is not UTF-8"),
        )
    })
}

/// Reads the caller's options: the first `size` bytes over the defaults,
/// so that a caller built against an older, shorter layout gets defaults
/// for the fields it does not know.
///
/// # Safety
/// `opts` must be non-null and point to at least `(*opts).size` readable
/// bytes.
unsafe fn read(opts: *const vecring_options_t) -> Result<vecring_options_t, Error> {
    // SAFETY: the caller guarantees `opts` is readable; `size` is its
    // first field, so reading 4 bytes is in bounds for any version.
    let size = unsafe { opts.cast::<u32>().read_unaligned() };
    let ours = std::mem::size_of::<vecring_options_t>() as u32;
    if size < OPTIONS_SIZE_V1 {
        return Err(Error::inval(format!(
            "options.size is {size}; call vecring_options_init() first (expected {ours})"
        )));
    }
    if size > ours {
        return Err(Error::inval(format!(
            "options.size is {size}, larger than this library's {ours}: the program was built \
             against a newer vecring.h than the library it runs with"
        )));
    }
    let mut out = vecring_options_t::DEFAULT;
    // SAFETY: `size <= sizeof` bytes are readable at `opts` (caller) and
    // writable at `out`; the regions are distinct.
    unsafe {
        std::ptr::copy_nonoverlapping(
            opts.cast::<u8>(),
            (&mut out as *mut vecring_options_t).cast::<u8>(),
            size as usize,
        );
    }
    Ok(out)
}

/// A [`LinkBuilder`] set up from the caller's options.
///
/// # Safety
/// `opts` must be non-null and point to a `vecring_options_t` (of at least
/// its `size` bytes) whose string and array pointers are valid as the
/// header describes.
pub(crate) unsafe fn builder(opts: *const vecring_options_t) -> Result<LinkBuilder, Error> {
    // SAFETY: forwarded caller guarantee.
    let o = unsafe { read(opts)? };
    // SAFETY: the header requires NUL-terminated strings or NULL.
    let (domain, link) = unsafe { (name(o.domain, "domain")?, name(o.link, "link")?) };
    let mut b = vecring_core::Link::builder(domain, link);
    b = match o.role {
        VECRING_ROLE_SLAVE => b.role(Role::Slave),
        VECRING_ROLE_MASTER => b.role(Role::Master),
        r => {
            return Err(Error::inval(format!(
                "options.role is {r}; use VECRING_ROLE_MASTER or VECRING_ROLE_SLAVE"
            )))
        }
    };
    if !o.run_dir.is_null() {
        // SAFETY: non-null and NUL-terminated (caller).
        let dir = unsafe { CStr::from_ptr(o.run_dir) };
        if dir.to_bytes().is_empty() {
            return Err(Error::inval("options.run_dir is empty"));
        }
        b = b.run_dir(OsStr::from_bytes(dir.to_bytes()));
    }
    match o.numa_node {
        -1 => {}
        n if n >= 0 => b = b.numa_node(n as u32),
        n => {
            return Err(Error::inval(format!(
                "options.numa_node is {n}; use -1 for none"
            )))
        }
    }
    b = b.hugepages(match o.hugepages {
        VECRING_HUGEPAGES_PREFER => HugepagePolicy::Prefer,
        VECRING_HUGEPAGES_REQUIRE => HugepagePolicy::Require,
        VECRING_HUGEPAGES_NEVER => HugepagePolicy::Never,
        h => {
            return Err(Error::inval(format!(
                "options.hugepages is {h}; use VECRING_HUGEPAGES_*"
            )))
        }
    });
    if o.slot_count != 0 || o.slot_size != 0 || o.max_frame_len != 0 {
        let d = Geometry::DEFAULT;
        let or = |v: u32, default: u32| if v == 0 { default } else { v };
        let g = Geometry::with_max_frame_len(
            or(o.slot_count, d.slot_count()),
            or(o.slot_size, d.slot_size()),
            or(o.max_frame_len, d.max_frame_len()),
        )
        .map_err(|e| Error::inval(format!("invalid ring geometry: {e}")))?;
        b = b.geometry(g);
    }
    if o.socket_mode != 0 {
        if o.socket_mode > 0o777 {
            return Err(Error::inval(format!(
                "options.socket_mode is {:#o}; only permission bits (0..0777) are allowed",
                o.socket_mode
            )));
        }
        b = b.socket_mode(o.socket_mode);
    }
    let id = |v: i64, what: &str| -> Result<Option<u32>, Error> {
        match v {
            -1 => Ok(None),
            0..=0xffff_fffe => Ok(Some(v as u32)),
            _ => Err(Error::inval(format!(
                "options.{what} is {v}; use -1 for none"
            ))),
        }
    };
    match (id(o.owner_uid, "owner_uid")?, id(o.owner_gid, "owner_gid")?) {
        (Some(uid), Some(gid)) => b = b.owner(uid, gid),
        (None, None) => {}
        _ => {
            return Err(Error::inval(
                "options.owner_uid and owner_gid must both be set or both be -1",
            ))
        }
    }
    if o.allowed_uid_count > 0 {
        if o.allowed_uids.is_null() {
            return Err(Error::inval(
                "options.allowed_uids is NULL but allowed_uid_count is not 0",
            ));
        }
        // SAFETY: non-null; the caller guarantees `allowed_uid_count`
        // readable entries.
        let uids =
            unsafe { std::slice::from_raw_parts(o.allowed_uids, o.allowed_uid_count as usize) };
        for &uid in uids {
            b = b.allow_uid(uid);
        }
    }
    if o.master_uid_count > 0 {
        if o.master_uids.is_null() {
            return Err(Error::inval(
                "options.master_uids is NULL but master_uid_count is not 0",
            ));
        }
        // SAFETY: non-null; the caller guarantees `master_uid_count`
        // readable entries.
        let uids =
            unsafe { std::slice::from_raw_parts(o.master_uids, o.master_uid_count as usize) };
        for &uid in uids {
            b = b.master_uid(uid);
        }
    }
    if !o.netns.is_null() {
        // SAFETY: non-null and NUL-terminated (caller).
        let ns = unsafe { CStr::from_ptr(o.netns) }.to_bytes();
        b = match ns {
            b"" => return Err(Error::inval("options.netns is empty; use NULL for none")),
            b"self" => b.netns_self(),
            p if p.starts_with(b"/") => b.netns(OsStr::from_bytes(p)),
            _ => {
                return Err(Error::inval(
                    "options.netns must be an absolute path to a namespace file or \"self\"",
                ))
            }
        };
    }
    if o.retry_interval_ms != 0 {
        b = b.retry_interval(Duration::from_millis(o.retry_interval_ms.into()));
    }
    if let Some(f) = o.on_state_change {
        let cb = Callback {
            f,
            user_data: o.user_data,
        };
        b = b.on_state_change(move |state| cb.call(state));
    }
    Ok(b)
}
