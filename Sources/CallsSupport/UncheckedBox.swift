/// Carries a value across a queue hop the compiler cannot prove safe. The SDKs use it only to
/// deliver documented (non-Sendable) callbacks and listeners on the configured callback queue,
/// which is where their thread rules say those run: the one place in both SDKs where that
/// promise is made by hand.
package struct UncheckedBox<T>: @unchecked Sendable {
    package let value: T
    package init(_ value: T) { self.value = value }
}
