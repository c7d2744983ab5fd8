// `import ListStore` brings the observable 2D array, index paths with their UIKit
// conveniences, and the reactive operators that observers use.
@_exported public import Observable2D
@_exported public import ReactiveCore
