// Observable2D
