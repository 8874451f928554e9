//! Tests of the controller's records, image and decisions: every decision is checked by
//! applying the records it returns to the image and looking at the image.
mod image_tests;
