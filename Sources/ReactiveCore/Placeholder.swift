// ReactiveCore
