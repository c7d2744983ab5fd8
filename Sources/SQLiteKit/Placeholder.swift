// SQLiteKit
