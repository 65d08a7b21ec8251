public enum TuttiNodePlaceholder {}
