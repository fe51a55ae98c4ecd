/// Where a recording's or transcript's file is kept, as the REST rows say it: on the node that
/// made it (`local`: no object storage configured), queued for the bucket (`uploading`: served
/// by its node until the upload lands), or in the bucket (`objectStorage`: every node serves it).
public enum FileStorage: String, Codable, Sendable, Equatable {
    case local
    case uploading
    case objectStorage
}
