/// The suite's one error for a helper that could not do its job (a service that did not start,
/// a handshake refused, a document without the section a test reads): the message says what
/// and why, and is what the failing test prints.
public struct TestFailure: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
