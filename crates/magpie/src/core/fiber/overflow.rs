//! A clear message when a task overflows its fiber stack.
//!
//! Tasks run on fibers with a guard page below their stack. A spawn never grows a fiber past its
//! reserve (the stack condition moves work to fresh fibers, or stops a forced work-first spawn
//! with `Error::StackLimit`), but a task's own plain recursion can. Rust reports an overflow of a
//! thread's stack as "thread has overflowed its stack"; it does not know fiber stacks, so without
//! this a fiber overflow would be a bare segmentation fault. The handler installed here recognises
//! a fault in the running fiber's guard page, says so (naming `Builder::stack_size`) and aborts.
//! Any other fault goes to the handler that was installed before, or to the default action.
//! std gives every thread it starts an alternate signal stack, so the handler has a stack to run on.

use std::sync::Once;

static INSTALL: Once = Once::new();
static mut PREVIOUS: [Option<libc::sigaction>; 2] = [None, None];

const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// Installs the handler once per process.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: plain sigaction calls with a zeroed, then filled, struct; PREVIOUS is written
            // here, inside `call_once`, before the handler that reads it is installed.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                    continue;
                }
                PREVIOUS[i] = Some(old);
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = handler as *const () as usize;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    });
}

const MESSAGE: &[u8] =
    b"magpie: fatal: a task overflowed its fiber stack (its own recursion, not spawns); \
raise Builder::stack_size (default 2 MiB) or spawn the recursion with join/scope\n";

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some((low, high)) = crate::worker::guard_of_running_fiber() {
        if (low..high).contains(&addr) {
            // SAFETY: write(2) and abort(3) are async-signal-safe.
            unsafe {
                libc::write(2, MESSAGE.as_ptr().cast(), MESSAGE.len());
                libc::abort();
            }
        }
    }
    let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    // SAFETY: PREVIOUS was written before this handler was installed and is never written again.
    let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS))[i] };
    match prev {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            // SAFETY: chaining to the handler installed before ours, with its own calling
            // convention.
            unsafe {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(p.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                    f(sig);
                }
            }
        }
        _ => {
            // Default action: restore it and return; the faulting instruction runs again and the
            // process dies of the signal as it would have without us.
            // SAFETY: resetting a signal to its default disposition.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
    }
}
