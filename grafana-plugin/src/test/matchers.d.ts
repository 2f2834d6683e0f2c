// The DOM matchers jest/setup.js adds to expect (toBeInTheDocument, ...), for tsc.
import '@testing-library/jest-dom/jest-globals';
