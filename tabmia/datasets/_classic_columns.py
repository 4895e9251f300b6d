"""Column names and categorical columns of the classic data sets, as their sources
publish them (read by :mod:`tabmia.datasets._classic_table`)."""

from __future__ import annotations

ADULT_COLUMNS = (
    "age workclass fnlwgt education education-num marital-status occupation relationship "
    "race sex capital-gain capital-loss hours-per-week native-country income"
).split()
ADULT_CATEGORICAL = (
    "workclass education marital-status occupation relationship race sex native-country"
).split()
GERMAN_COLUMNS = (
    "checking_status duration credit_history purpose credit_amount savings_status employment "
    "installment_commitment personal_status other_parties residence_since property_magnitude "
    "age other_payment_plans housing existing_credits job num_dependents own_telephone "
    "foreign_worker class"
).split()
GERMAN_CATEGORICAL = (
    "checking_status credit_history purpose savings_status employment personal_status "
    "other_parties property_magnitude other_payment_plans housing job own_telephone "
    "foreign_worker"
).split()
HEPATITIS_COLUMNS = (
    "AGE SEX STEROID ANTIVIRALS FATIGUE MALAISE ANOREXIA LIVER_BIG LIVER_FIRM SPLEEN_PALPABLE "
    "SPIDERS ASCITES VARICES BILIRUBIN ALK_PHOSPHATE SGOT ALBUMIN PROTIME HISTOLOGY"
).split()
HEPATITIS_CATEGORICAL = (
    "SEX STEROID ANTIVIRALS FATIGUE MALAISE ANOREXIA LIVER_BIG LIVER_FIRM SPLEEN_PALPABLE "
    "SPIDERS ASCITES VARICES HISTOLOGY"
).split()
TAIWAN_CATEGORICAL = ["SEX", "EDUCATION", "MARRIAGE"]
CLEVELAND_COLUMNS = (
    "age sex cp trestbps chol fbs restecg thalach exang oldpeak slope ca thal num"
).split()
CLEVELAND_CATEGORICAL = ["sex", "cp", "fbs", "restecg", "exang", "slope", "thal"]
STATLOG_COLUMNS = (
    "age sex chest_pain resting_bp chol fbs restecg max_hr exang oldpeak slope ca thal class"
).split()
STATLOG_CATEGORICAL = ["sex", "chest_pain", "fbs", "restecg", "exang", "slope", "thal"]
BANK_CATEGORICAL = ("job marital education default housing loan contact month poutcome").split()
COMPAS_FEATURES = (
    "sex age age_cat race juv_fel_count juv_misd_count juv_other_count priors_count c_charge_degree"
).split()
COMPAS_CATEGORICAL = ["sex", "age_cat", "race", "c_charge_degree"]
PIMA_COLUMNS = (
    "Pregnancies Glucose BloodPressure SkinThickness Insulin BMI DiabetesPedigreeFunction "
    "Age Outcome"
).split()
AUSTRALIAN_COLUMNS = [f"A{i}" for i in range(1, 15)] + ["class"]
AUSTRALIAN_CATEGORICAL = ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]
