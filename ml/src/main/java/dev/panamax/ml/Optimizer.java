package dev.panamax.ml;

/**
 * An element-wise optimizer, as PyTorch defines it, applied by {@link ShardedOptimizer} to the
 * parameters a rank owns. Its state (momentum, Adam's moments) is kept in float64, {@link #stateSlots}
 * values per parameter.
 */
public sealed interface Optimizer permits Optimizer.Sgd, Optimizer.Adam {

    /** Stochastic gradient descent with heavy-ball momentum: {@code v = momentum * v + g; p -= learningRate * v}
     * (PyTorch's {@code SGD} without dampening or Nesterov; momentum 0 is plain SGD, with no state). */
    record Sgd(double learningRate, double momentum) implements Optimizer {
        public Sgd {
            requirePositive("learningRate", learningRate);
            if (!(momentum >= 0 && momentum < 1)) {
                throw new IllegalArgumentException("momentum must be in [0, 1): " + momentum);
            }
        }

        @Override
        public int stateSlots() {
            return momentum == 0 ? 0 : 1;
        }
    }

    /**
     * Adam (Kingma and Ba 2015, PyTorch's {@code Adam} without weight decay): {@code m = b1 m + (1-b1) g},
     * {@code v = b2 v + (1-b2) g^2}, {@code p -= learningRate * m^ / (sqrt(v^) + epsilon)} with the
     * bias corrections {@code m^ = m / (1 - b1^t)} and {@code v^ = v / (1 - b2^t)} at step t.
     */
    record Adam(double learningRate, double beta1, double beta2, double epsilon) implements Optimizer {
        public Adam {
            requirePositive("learningRate", learningRate);
            requirePositive("epsilon", epsilon);
            if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
                throw new IllegalArgumentException("beta1 and beta2 must be in [0, 1): " + beta1 + ", " + beta2);
            }
        }

        @Override
        public int stateSlots() {
            return 2;
        }
    }

    /** Plain SGD. */
    static Optimizer sgd(double learningRate) {
        return new Sgd(learningRate, 0);
    }

    /** SGD with momentum. */
    static Optimizer sgd(double learningRate, double momentum) {
        return new Sgd(learningRate, momentum);
    }

    /** Adam with PyTorch's defaults: beta1 0.9, beta2 0.999, epsilon 1e-8. */
    static Optimizer adam(double learningRate) {
        return new Adam(learningRate, 0.9, 0.999, 1e-8);
    }

    /** State values kept per parameter. */
    int stateSlots();

    private static void requirePositive(String name, double value) {
        if (!(value > 0)) {
            throw new IllegalArgumentException(name + " must be > 0: " + value);
        }
    }
}
