//! The calling thread's CPU time: what a rank's tasks cost when other programs share its cores.
//!
//! Wall-clock time counts the spells a rank's thread waits for a core. On a machine that other
//! jobs load, or with more ranks than cores, a task's wall time then says more about the
//! operating system's scheduler than about the task, and the balancers, which move tasks by
//! their measured cost, chase that noise. The thread's CPU clock advances only while the thread
//! runs. Read through the C library's `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, which the
//! standard library already links on Linux; elsewhere there is no clock and the collection
//! measures wall time alone.

/// Nanoseconds of CPU time the calling thread has used, if this platform has the clock.
#[inline]
pub fn thread_cpu_ns() -> Option<u64> {
    imp::thread_cpu_ns()
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod imp {
    /// `struct timespec` on 64-bit Linux: `time_t` and `long` are both 64 bits.
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }

    /// Linux's id of the calling thread's CPU-time clock.
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }

    pub(super) fn thread_cpu_ns() -> Option<u64> {
        let mut ts = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` writes one `struct timespec`, whose layout on 64-bit Linux
        // `Timespec` matches, through a pointer to a live local, and reads nothing else; the
        // clock id is Linux's constant for the calling thread's CPU clock.
        let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
mod imp {
    pub(super) fn thread_cpu_ns() -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_advances_with_work_and_not_with_sleep() {
        let Some(a) = thread_cpu_ns() else {
            return; // no clock on this platform: nothing to check
        };
        // Spin until the clock has advanced 10 ms (however busy the machine is, the thread
        // gets that much CPU well within the deadline).
        let mut x = 1u64;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut b = a;
        while b - a < 10_000_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "the CPU clock stood still"
            );
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            b = thread_cpu_ns().expect("the clock was there a moment ago");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let c = thread_cpu_ns().expect("the clock was there a moment ago");
        assert!(c - b < 25_000_000, "a 50 ms sleep used {} ns of CPU", c - b);
    }
}
