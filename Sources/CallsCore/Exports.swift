/// Every importer of CallsCore gets the support code too (locks, clocks, the scheduler, the
/// logs, the argument scanner): CallsCore is the wire and media framing, CallsSupport what any
/// module needs whatever it speaks.
@_exported import CallsSupport
