//! Client credentials from a keytab or a ticket cache, through MIT's
//! `gss_acquire_cred_from` (a credential store per call, so no process environment changes):
//! libgssapi wraps only `gss_acquire_cred`, which reads the keytab and cache from the
//! environment.

use std::ffi::{c_void, CString};
use std::ptr;

use libgssapi::credential::Cred;
use libgssapi::error::{Error as GssError, MajorFlags};
use libgssapi_sys as sys;

/// Where the credentials come from: `(key, value)` pairs of MIT's credential store
/// (`client_keytab`, `ccache`).
pub(crate) type Store = Vec<(&'static str, String)>;

/// Credentials to initiate contexts as `principal` (`None`: the store's default one).
pub(crate) fn acquire(principal: Option<&str>, store: &Store) -> Result<Cred, GssError> {
    let name = principal.map(ImportedName::new).transpose()?;
    let owned: Vec<(CString, CString)> = store
        .iter()
        .map(|(key, value)| (c_string(key), c_string(value)))
        .collect();
    let mut elements: Vec<sys::gss_key_value_element_desc> = owned
        .iter()
        .map(|(key, value)| sys::gss_key_value_element_desc {
            key: key.as_ptr(),
            value: value.as_ptr(),
        })
        .collect();
    let set = sys::gss_key_value_set_desc {
        count: elements.len() as u32,
        elements: elements.as_mut_ptr(),
    };
    let mut minor = 0;
    let mut cred: sys::gss_cred_id_t = ptr::null_mut();
    // SAFETY: every pointer passed lives until the call returns (`name`, `owned`, `elements`,
    // `set` are locals); the outputs we do not want are null, which the API allows; on success
    // `cred` is a new credential that we own and hand to `Cred`, which releases it once.
    let major = unsafe {
        sys::gss_acquire_cred_from(
            &mut minor,
            name.as_ref().map_or(ptr::null_mut(), |n| n.0),
            sys::_GSS_C_INDEFINITE,
            ptr::null_mut(),
            sys::GSS_C_INITIATE as sys::gss_cred_usage_t,
            &set,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if major != sys::GSS_S_COMPLETE {
        return Err(GssError {
            major: MajorFlags::from_bits_retain(major),
            minor,
        });
    }
    // SAFETY: see above; `cred` is owned by no one else.
    Ok(unsafe { Cred::from_c(cred) })
}

/// Interior NULs cannot name a file or cache; they are cut there, and the library then
/// reports the shortened name as not found.
fn c_string(text: &str) -> CString {
    CString::new(text.split('\0').next().unwrap_or_default()).unwrap_or_default()
}

/// A principal name imported as a Kerberos user name, released on drop.
struct ImportedName(sys::gss_name_t);

impl ImportedName {
    fn new(principal: &str) -> Result<Self, GssError> {
        let mut buffer = sys::gss_buffer_desc {
            length: principal.len(),
            value: principal.as_ptr() as *mut c_void,
        };
        let mut minor = 0;
        let mut name: sys::gss_name_t = ptr::null_mut();
        // SAFETY: `buffer` points at `principal`'s bytes for the call, which only reads them;
        // GSS_C_NT_USER_NAME is a constant OID the library exports (read, never written).
        let major = unsafe {
            sys::gss_import_name(&mut minor, &mut buffer, sys::GSS_C_NT_USER_NAME, &mut name)
        };
        if major != sys::GSS_S_COMPLETE {
            return Err(GssError {
                major: MajorFlags::from_bits_retain(major),
                minor,
            });
        }
        Ok(Self(name))
    }
}

impl Drop for ImportedName {
    fn drop(&mut self) {
        let mut minor = 0;
        // SAFETY: the name came from gss_import_name and is released once, here.
        unsafe { sys::gss_release_name(&mut minor, &mut self.0) };
    }
}
