public enum TuttiTestingPlaceholder {}
