import CSocketBatch

/// The calling thread's name as the kernel shows it (`top -H`, `/proc/self/task/N/comm`):
/// Foundation's `Thread.name` stays inside Foundation on Linux. At most 15 bytes are kept.
public enum ThreadName {
    public static func set(_ name: String) { _ = callroom_set_thread_name(String(name.utf8.prefix(15)) ?? name) }
}
